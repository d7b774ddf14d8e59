"""What a DynamoDB write costs, in write units, priced the way DynamoDB's developer guide prices it
("Item sizes and formats", "Capacity unit consumption for write operations", "Capacity management
for transactions", "Provisioned throughput considerations for GSIs"), from the items before and
after it. Shared by `make bench`'s write meter and the capacity-faithful embedded DynamoDB
(`clockless_tools.local.capacity`), which both read the items from moto's state in this process.

- a write costs 1 unit per KB (1,024 bytes, rounded up, at least 1) of the larger of the item
  before and after it;
- every global secondary index whose entry the write puts, changes or removes costs 1 unit per KB
  of the projected entry, and 2 writes (a delete and a put) when the write moves the entry's key.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

KB: Final = 1024
SINGLE_WRITES: Final = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete"}

Item = Mapping[str, Mapping[str, Any]]


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


def write_units_of(before: Item | None, after: Item | None) -> int:
    """Units of one item write: its larger image, per started KB, at least one."""
    size = max(item_size(before) if before else 0, item_size(after) if after else 0)
    return max(1, math.ceil(size / KB))


@dataclass(frozen=True, slots=True)
class IndexShape:
    name: str
    keys: tuple[str, ...]  # the index's own key attributes, its partition key first
    projected: frozenset[str] | None  # None: ALL


def projected_entry(item: Item | None, index: IndexShape, table_keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The index's entry for an item, or None when the item is not in the (sparse) index."""
    if item is None or not all(name in item for name in index.keys):
        return None
    if index.projected is None:
        return dict(item)
    wanted = set(table_keys) | set(index.keys) | index.projected
    return {name: value for name, value in item.items() if name in wanted}


def index_write_units(before: Item | None, after: Item | None, index: IndexShape, table_keys: tuple[str, ...]) -> int:
    old, new = projected_entry(before, index, table_keys), projected_entry(after, index, table_keys)
    if old == new:
        return 0
    if old is None or new is None:
        return write_units_of(old, new)
    if any(old.get(name) != new.get(name) for name in index.keys):
        return write_units_of(old, None) + write_units_of(None, new)  # the entry moves: delete, then put
    return write_units_of(old, new)


def write_actions(operation: str, body: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The item writes a request asks for: (Put/Update/Delete/ConditionCheck, its parameters)."""
    if operation in SINGLE_WRITES:
        return [(SINGLE_WRITES[operation], body)]
    if operation == "TransactWriteItems":
        return [next(iter(entry.items())) for entry in body.get("TransactItems") or []]
    if operation == "BatchWriteItem":
        actions: list[tuple[str, Mapping[str, Any]]] = []
        for table, requests in (body.get("RequestItems") or {}).items():
            for request in requests:
                if "PutRequest" in request:
                    actions.append(("Put", {"TableName": table, "Item": request["PutRequest"]["Item"]}))
                else:
                    actions.append(("Delete", {"TableName": table, "Key": request["DeleteRequest"]["Key"]}))
        return actions
    return []


def moto_dynamodb_backend() -> Any:
    """moto's DynamoDB state in this process, which the embedded server serves."""
    from moto.backends import get_backend

    from clockless_tools.template.intrinsics import LocalNames

    names = LocalNames()
    return get_backend("dynamodb")[names.account_id][names.region]


class MotoTables:
    """Key schema and index shapes of moto's tables (read once per table), and their items."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._shapes: dict[str, tuple[tuple[str, ...], list[IndexShape]]] = {}

    def shape(self, name: str) -> tuple[tuple[str, ...], list[IndexShape]]:
        """(the table's key attributes, partition key first; its global secondary indexes)."""
        if name not in self._shapes:
            table = self._backend.get_table(name)
            keys = (table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else []))
            indexes = []
            for index in table.global_indexes:
                projection = index.projection or {}
                kind = projection.get("ProjectionType", "ALL")
                projected = (
                    None
                    if kind == "ALL"
                    else frozenset(projection.get("NonKeyAttributes", []) if kind == "INCLUDE" else [])
                )
                indexes.append(IndexShape(index.name, tuple(index.schema_key_attrs), projected))
            self._shapes[name] = (keys, indexes)
        return self._shapes[name]

    def item(self, name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # moto's server may be writing this item on another thread; read again until a copy holds.
        for _ in range(10):
            try:
                found = self._backend.get_item(name, dict(key))
                return None if found is None else copy.deepcopy(found.to_json()["Attributes"])
            except RuntimeError:
                continue
        raise RuntimeError(f"could not read {name} {dict(key)} from moto's state")

    def restore(self, name: str, key: Mapping[str, Any], item: Mapping[str, Any] | None) -> None:
        """Put the item back as it was (None: it did not exist)."""
        if item is not None:
            self._backend.get_table(name).put_item(dict(item))
        elif self._backend.get_item(name, dict(key)) is not None:
            self._backend.delete_item(name, dict(key))

    def key_of(self, name: str, operation: str, action: Mapping[str, Any]) -> dict[str, Any]:
        keys, _ = self.shape(name)
        source = action["Item"] if operation == "Put" else action["Key"]
        return {attribute: source[attribute] for attribute in keys}
