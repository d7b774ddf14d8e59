"""moto's SQS applying one request at a time, as `SerializedDynamoDB` does for DynamoDB.

moto's queues have no lock around their messages. A receive checks that a message is visible,
then marks it received, as separate steps, so two receives at once can both take the same message:
with 32 pollers draining 32 messages (the bench's fanned-out tick, `make run`'s workers), 11 drains
in 200 took one message twice, and a partition ran twice. A receive can also fail outright
("Set changed size during iteration") while another request (a delete, a receive) changes the
queue's in-flight messages: seen once in 9 such drains. SQS does neither.
Once `requests_one_at_a_time` is installed, this process's SQS backends answer one request at a
time. A long poll waits for messages outside the lock, as moto's own loop does, so a poller
waiting on an empty queue holds no other request up. Every embedded server installs it
(`clockless_tools.local.dynamodb.make_moto_server`); `tests/integration/test_local_sqs.py` widens
the receive's race, and plants moto's own requests to see it happen.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any, Final

_lock = threading.RLock()
# Set on moto's SQSBackend once installed.
_INSTALLED: Final = "_clockless_one_at_a_time"


def requests_one_at_a_time() -> None:
    """Patch moto's SQS backend in this process, once (see the module's docstring)."""
    from moto.sqs.models import SQSBackend

    with _lock:
        if getattr(SQSBackend, _INSTALLED, False):
            return
        for name, stock in list(vars(SQSBackend).items()):
            if not name.startswith("_") and inspect.isfunction(stock):
                setattr(SQSBackend, name, _receive(stock) if name == "receive_message" else _locked(stock))
        setattr(SQSBackend, _INSTALLED, True)


def _locked(stock: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(stock)
    def one_at_a_time(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return stock(*args, **kwargs)

    return one_at_a_time


def _receive(stock: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    @functools.wraps(stock)
    def receive_message(  # noqa: PLR0917 - moto's signature, which its responses call positionally
        backend: Any,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> list[Any]:
        end = time.monotonic() + wait_seconds_timeout
        while True:
            with _lock:
                received = stock(backend, queue_name, count, 0, visibility_timeout, message_attribute_names)
            if received or time.monotonic() >= end:
                return received
            backend.get_queue(queue_name).wait_for_messages(1)

    return receive_message
