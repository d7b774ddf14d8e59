"""Added network latency: every request botocore sends waits first, as it would for DynamoDB's
round trip. moto answers on loopback in well under a millisecond of network time, so without it a
sequential loop and a batched writer differ only in moto's CPU, which is not what Lambda sees."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from botocore.endpoint import Endpoint


@contextlib.contextmanager
def added_latency(milliseconds: float) -> Iterator[None]:
    """Each request sleeps `seconds` before it is sent (the GIL is released while it sleeps, as
    it is while a real request waits on the network)."""
    seconds = milliseconds / 1000
    original = getattr(Endpoint, "_send")  # noqa: B009 - private on purpose: the one place every request passes

    def delayed_send(self: Endpoint, request: Any) -> Any:
        time.sleep(seconds)
        return original(self, request)

    setattr(Endpoint, "_send", delayed_send)  # noqa: B010
    try:
        yield
    finally:
        setattr(Endpoint, "_send", original)  # noqa: B010
