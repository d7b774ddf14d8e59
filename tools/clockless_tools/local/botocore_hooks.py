"""Count the AWS requests a piece of code sends, exactly: every HTTP request botocore sends
(retries included), by service operation. Used by tests and `make bench`."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from botocore.endpoint import Endpoint

_lock = threading.Lock()


class RequestCounter:
    def __init__(self) -> None:
        self.operations: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.operations.values())

    def of(self, operation: str) -> int:
        return self.operations[operation]

    def reset(self) -> None:
        self.operations.clear()


def _operation_of(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"")
    target = target.decode() if isinstance(target, bytes) else str(target)
    return target.rsplit(".", 1)[-1] if target else f"{request.method} {request.url}"


@contextlib.contextmanager
def count_requests() -> Iterator[RequestCounter]:
    """Patch botocore's single send path for the duration; both boto3 and PynamoDB go through it."""
    counter = RequestCounter()
    original = getattr(Endpoint, "_send")  # noqa: B009 - private on purpose: the one place every request passes

    def counting_send(self: Endpoint, request: Any) -> Any:
        with _lock:
            counter.operations[_operation_of(request)] += 1
        return original(self, request)

    setattr(Endpoint, "_send", counting_send)  # noqa: B010
    try:
        yield counter
    finally:
        setattr(Endpoint, "_send", original)  # noqa: B010


@contextlib.contextmanager
def after_each_exchange(hook: Callable[[Any, Any], None]) -> Iterator[None]:
    """Call `hook(request, response)` once each request has been answered, with botocore's raw
    response (status code, headers, body as the service sent it), on the thread that sent it.
    `make bench` reads what each DynamoDB response returned through it."""
    original = getattr(Endpoint, "_send")  # noqa: B009 - private on purpose: the one place every request passes

    def send_then_hook(self: Endpoint, request: Any) -> Any:
        response = original(self, request)
        hook(request, response)
        return response

    setattr(Endpoint, "_send", send_then_hook)  # noqa: B010
    try:
        yield
    finally:
        setattr(Endpoint, "_send", original)  # noqa: B010
