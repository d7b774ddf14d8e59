"""What a DynamoDB request reads, in read units, and a meter of the read units of each request."""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.local.botocore_hooks import after_each_exchange


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def _binary_size(data: Any) -> int:
    # On the wire a binary value is base64; DynamoDB counts its raw bytes.
    return len(data) if isinstance(data, bytes) else len(str(data).rstrip("=")) * 3 // 4


_SCALAR_SIZES: Final[dict[str, Callable[[Any], int]]] = {
    "S": lambda data: len(str(data).encode("utf-8")),
    "N": lambda data: _number_size(str(data)),
    "B": _binary_size,
    "BOOL": lambda _data: 1,
    "NULL": lambda _data: 1,
}
_SET_MEMBERS: Final = {"SS": "S", "NS": "N", "BS": "B"}


def attribute_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value, as DynamoDB counts them ("Item sizes and formats")."""
    ((kind, data),) = value.items()
    if kind in _SCALAR_SIZES:
        return _SCALAR_SIZES[kind](data)
    if kind in _SET_MEMBERS:
        return sum(_SCALAR_SIZES[_SET_MEMBERS[kind]](member) for member in data)
    # A list or map: 3 bytes, plus 1 byte and the size of each element (and a map's key names).
    if kind == "L":
        return 3 + sum(attribute_size(member) + 1 for member in data)
    if kind == "M":
        return 3 + sum(len(name.encode("utf-8")) + attribute_size(member) + 1 for name, member in data.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes of an item: each attribute's name plus its value."""
    return sum(len(name.encode("utf-8")) + attribute_size(value) for name, value in item.items())


def read_units(operation: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> float:
    """Read capacity units a request consumes, computed from what it returned.

    A Query or Scan sums the sizes of the items it read and rounds up to 4 KB once; a GetItem
    rounds its one item; a miss still costs one unit. Eventually consistent reads (every read on a
    GSI) cost half. A Scan's filter runs after the read, so for a filtered Scan this is a floor.
    """
    factor = 1.0 if request.get("ConsistentRead") else 0.5
    if operation in ("Query", "Scan"):
        size = sum(item_size(item) for item in response.get("Items") or [])
        return max(1, math.ceil(size / 4096)) * factor
    if operation == "GetItem":
        item = response.get("Item")
        return max(1, math.ceil((item_size(item) if item else 0) / 4096)) * factor
    if operation == "BatchGetItem":
        items = [item for found in (response.get("Responses") or {}).values() for item in found]
        return sum(max(1, math.ceil(item_size(item) / 4096)) * factor for item in items)
    return 0.0


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
