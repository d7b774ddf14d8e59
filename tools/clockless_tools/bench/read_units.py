"""What a DynamoDB request reads, in read units, and a meter of the read units of each request."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from clockless_tools.local.botocore_hooks import after_each_exchange
from clockless_tools.local.reads import read_units
from clockless_tools.local.units import attribute_size, item_size

__all__ = ["DynamoMeter", "attribute_size", "item_size", "meter_dynamodb", "read_units", "tables_named"]


def tables_named(request: Mapping[str, Any]) -> frozenset[str]:
    names = set()
    if "TableName" in request:
        names.add(str(request["TableName"]))
    for entry in request.get("TransactItems") or []:
        for operation in entry.values():
            names.add(str(operation["TableName"]))
    names.update(str(name) for name in request.get("RequestItems") or {})
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class DynamoCall:
    operation: str
    tables: frozenset[str]
    read_units: float


class DynamoMeter:
    """Every DynamoDB request sent while active: its tables and the read units its response cost."""

    def __init__(self) -> None:
        self.calls: list[DynamoCall] = []
        self._lock = threading.Lock()

    def record(self, request: Any, response: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else str(target)
        if not target.startswith("DynamoDB_"):
            return
        operation = target.rsplit(".", 1)[-1]
        body = json.loads(request.body or b"{}")
        answer = json.loads(response.content or b"{}") if response.status_code == 200 else {}
        call = DynamoCall(operation, tables_named(body), read_units(operation, body, answer))
        with self._lock:
            self.calls.append(call)

    @property
    def read_units(self) -> float:
        return sum(call.read_units for call in self.calls)

    @property
    def tables(self) -> frozenset[str]:
        return frozenset(name for call in self.calls for name in call.tables)

    def requests_outside(self, tables: Iterable[str]) -> int:
        excluded = set(tables)
        return sum(1 for call in self.calls if not call.tables <= excluded)


@contextlib.contextmanager
def meter_dynamodb() -> Iterator[DynamoMeter]:
    """Every DynamoDB request answered while active, with what its response returned."""
    meter = DynamoMeter()
    with after_each_exchange(meter.record):
        yield meter
