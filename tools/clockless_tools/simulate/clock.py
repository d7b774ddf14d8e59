"""The kit's clock (`clockless.throttle.Clock`) on time-machine's simulated time: a wait (a
throttle's backoff, the pacer's) moves simulated time forward instead of sleeping, so what the
wait was for (a token bucket refilling, a lease running out, a delayed message) happens at once."""

from __future__ import annotations

import threading
import time

import time_machine


class SimulatedClock:
    def __init__(self, traveller: time_machine.Traveller) -> None:
        self.traveller = traveller
        self._lock = threading.Lock()
        self.waited = 0.0

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            self.waited += seconds
            self.traveller.shift(seconds)
