"""Failures injected where production meets them: in a function's own DynamoDB traffic.

The simulator arms one delivery (one thread) to fail after its n-th request to a domain table
has been answered, so the failure can land after some writes took effect, like a Lambda that
times out half way. Requests to bookkeeping tables (idempotency, ledger) do not count: the kit's
claim and release must still run. Nothing in the functions or the kit knows about this; it sits
on botocore's single send path, which boto3 and PynamoDB both use.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Collection, Iterator
from typing import Any, Final

from clockless_tools.local.botocore_hooks import after_each_response

WRITE_OPERATIONS: Final = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "ExecuteTransaction"}
)


class InjectedFault(RuntimeError):
    """Raised by the simulator inside a delivery; never by the code under test."""

    def __init__(self, message: str, *, writes_done: int) -> None:
        super().__init__(message)
        # Domain writes that had taken effect when the fault fired (the answered request included).
        self.writes_done = writes_done


def _operation(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"") if hasattr(request, "headers") else b""
    target = target.decode() if isinstance(target, bytes) else str(target)
    return target.rsplit(".", 1)[-1]


def tables_in_request(request: Any) -> set[str]:
    """The DynamoDB tables a request names (single-table, transaction and batch operations)."""
    body = request.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        payload = json.loads(body or "{}")
    except (TypeError, ValueError):
        return set()
    if not isinstance(payload, dict):
        return set()
    tables = {payload["TableName"]} if isinstance(payload.get("TableName"), str) else set()
    for item in payload.get("TransactItems") or []:
        for operation in item.values():
            if isinstance(operation, dict) and isinstance(operation.get("TableName"), str):
                tables.add(operation["TableName"])
    tables.update(key for key in (payload.get("RequestItems") or {}) if isinstance(key, str))
    return tables


class FaultInjector:
    """Arm a thread's next delivery to fail after `n` domain requests; install once around a replay."""

    def __init__(self, spared_tables: Collection[str]) -> None:
        self.spared_tables = frozenset(spared_tables)
        self._local = threading.local()

    def arm(self, after_requests: int) -> None:
        if after_requests < 1:
            raise ValueError("a fault fires after at least one request")
        self._local.remaining = after_requests
        self._local.writes = 0
        self._local.fired = False

    def disarm(self) -> bool:
        """Stop counting on this thread; True if the armed fault fired."""
        fired = bool(getattr(self._local, "fired", False))
        self._local.remaining = None
        self._local.fired = False
        return fired

    def _after_response(self, request: Any) -> None:
        remaining = getattr(self._local, "remaining", None)
        if remaining is None:
            return
        tables = tables_in_request(request)
        if tables and tables <= self.spared_tables:
            return
        self._local.remaining = remaining - 1
        if _operation(request) in WRITE_OPERATIONS:
            self._local.writes += 1
        if self._local.remaining == 0:
            self._local.remaining = None
            self._local.fired = True
            writes = self._local.writes
            raise InjectedFault(
                f"injected failure after a response from {', '.join(sorted(tables)) or 'DynamoDB'} "
                f"({writes} domain write(s) already done)",
                writes_done=writes,
            )

    @contextlib.contextmanager
    def installed(self) -> Iterator[FaultInjector]:
        with after_each_response(self._after_response):
            yield self
