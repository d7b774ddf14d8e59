"""Pacing: a worker offers its keys no more than they can take.

Two parts, shared by every lane of a worker run:

- a **token bucket** on the write units the run's transactions land on its shard key, filled at
  the current rate and holding at most one second of it (DynamoDB holds each partition key to
  1,000 write units per second: docs/fan-out.md, "Pacing");
- an **adaptive rate** (AIMD): halved on every throttle DynamoDB answers (a hot tenant key or a
  cold index can take less than the shard key's limit), raised by a fixed step after each
  transaction applied without one, never above the configured rate nor below its floor.

The clock is injected (`clockless.throttle.Clock`), so tests advance a fake one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Final

from clockless.errors import DeclarationError
from clockless.throttle import SYSTEM_CLOCK, Clock

DECREASE_FACTOR: Final = 0.5
# The bucket holds one second of the rate.
BURST_SECONDS: Final = 1.0


@dataclass(frozen=True, slots=True)
class PacingSettings:
    """Write units per second on the worker's shard key: the ceiling, the floor, and the step the
    rate creeps back up by after each unthrottled transaction."""

    max_units_per_s: float
    min_units_per_s: float
    increase_units_per_s: float

    def __post_init__(self) -> None:
        if not 0 < self.min_units_per_s <= self.max_units_per_s:
            raise DeclarationError(
                f"pacing needs 0 < minimum <= maximum write units per second, got "
                f"{self.min_units_per_s} and {self.max_units_per_s}"
            )
        if self.increase_units_per_s <= 0:
            raise DeclarationError(f"pacing's increase must be positive, got {self.increase_units_per_s}")


@dataclass
class Pacer:
    """The bucket as a schedule (GCRA): each request books `units / rate` seconds after the last
    booking, and waits until its booking is less than the bucket's one second ahead of now."""

    settings: PacingSettings
    clock: Clock = field(default=SYSTEM_CLOCK)
    rate: float = field(init=False)
    # for the logs and tests: throttles heard, time spent waiting for the bucket
    throttles: int = field(init=False, default=0)
    waited_s: float = field(init=False, default=0.0)
    _booked_until: float = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.rate = self.settings.max_units_per_s
        self._booked_until = self.clock.now()  # a full bucket: a run starts at once

    def take(self, units: float) -> None:
        """Wait until `units` write units may be sent. A request bigger than the bucket waits
        for its share of time, so it is slowed, never refused."""
        with self._lock:
            now = self.clock.now()
            self._booked_until = max(self._booked_until, now) + units / self.rate
            wait = self._booked_until - BURST_SECONDS - now
        if wait > 0:
            self.waited_s += wait
            self.clock.sleep(wait)

    def throttled(self) -> None:
        """DynamoDB refused for capacity: halve the rate (no lower than the floor), no burst now."""
        with self._lock:
            self.throttles += 1
            self.rate = max(self.settings.min_units_per_s, self.rate * DECREASE_FACTOR)
            self._booked_until = max(self._booked_until, self.clock.now() + BURST_SECONDS)

    def succeeded(self) -> None:
        """A transaction applied without a throttle: creep back up (no higher than the ceiling)."""
        with self._lock:
            self.rate = min(self.settings.max_units_per_s, self.rate + self.settings.increase_units_per_s)
