"""moto's SQS giving each message to one receive at a time.

moto's ReceiveMessage checks that a message is visible, then marks it received, as separate steps
with no lock, so two receives at once can both take the same message. With 32 pollers draining 32
messages (the bench's fanned-out tick, `make run`'s workers), 11 drains in 200 took one message
twice, and a partition ran twice. SQS hides a message it hands out from every other receive for
the visibility timeout. Once `receives_one_at_a_time` is installed, this process's SQS receives
take messages one call at a time. A long poll waits for messages outside the lock, as moto's own
loop does, so a poller waiting on an empty queue holds no other receive up. Every embedded server
installs it (`clockless_tools.local.dynamodb.make_moto_server`); `tests/integration/test_local_sqs.py`
makes the race wide and checks that one receive takes the message.
"""

from __future__ import annotations

import threading
import time
from typing import Any

_lock = threading.Lock()


def receives_one_at_a_time() -> None:
    """Patch moto's SQS backend in this process, once (see the module's docstring)."""
    from moto.sqs.models import SQSBackend

    with _lock:
        stock = SQSBackend.receive_message
        if getattr(stock, "stock", None) is not None:
            return

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
                    received: list[Any] = stock(
                        backend, queue_name, count, 0, visibility_timeout, message_attribute_names
                    )
                if received or time.monotonic() >= end:
                    return received
                backend.get_queue(queue_name).wait_for_messages(1)

        receive_message.stock = stock  # type: ignore[attr-defined]
        setattr(SQSBackend, "receive_message", receive_message)  # noqa: B010
