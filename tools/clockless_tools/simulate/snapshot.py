"""Tables as data: dump them, load a dump into fresh tables, and compare two dumps item by item.

Items stay in DynamoDB's typed JSON (`{"S": ...}`, `{"N": ...}`) so a comparison sees exactly
what was stored; binary values travel as base64 text between processes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

Item = dict[str, Any]
Snapshot = dict[str, list[Item]]

_BATCH: Final = 25


def _encode(value: Any) -> Any:
    """Typed DynamoDB value to plain JSON: bytes become base64 text."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return {name: _encode(inner) for name, inner in value.items()}
    if isinstance(value, list):
        return [_encode(inner) for inner in value]
    return value


def _decode(value: Any, *, binary: bool = False) -> Any:
    if isinstance(value, Mapping):
        return {name: _decode(inner, binary=name in ("B", "BS")) for name, inner in value.items()}
    if isinstance(value, list):
        return [_decode(inner, binary=binary) for inner in value]
    if binary and isinstance(value, str):
        return base64.b64decode(value)
    return value


def dump_tables(client: Any, tables: Iterable[str]) -> Snapshot:
    """Every item of every named table (consistent reads), as JSON-safe typed items."""
    snapshot: Snapshot = {}
    for table in tables:
        items: list[Item] = []
        for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
            items.extend(_encode(item) for item in page["Items"])
        snapshot[table] = items
    return snapshot


def load_tables(client: Any, snapshot: Snapshot) -> int:
    """Put every item of the snapshot into its (existing) table. Returns the number of items."""
    count = 0
    for table, items in snapshot.items():
        for start in range(0, len(items), _BATCH):
            pending: dict[str, Any] = {
                table: [{"PutRequest": {"Item": _decode(item)}} for item in items[start : start + _BATCH]]
            }
            while pending:
                pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        count += len(items)
    return count


def canonical(value: Any) -> Any:
    """A value with its sets sorted, so two dumps of the same data compare equal."""
    if isinstance(value, Mapping):
        return {
            name: sorted(inner, key=json.dumps) if name in ("SS", "NS", "BS") else canonical(inner)
            for name, inner in sorted(value.items())
        }
    if isinstance(value, list):
        return [canonical(inner) for inner in value]
    return value


def plain(value: Mapping[str, Any]) -> Any:
    """A typed value as people read it: {"S": "a"} -> "a", {"N": "2"} -> "2"."""
    ((kind, inner),) = value.items()
    if kind == "M":
        return {name: plain(item) for name, item in inner.items()}
    if kind == "L":
        return [plain(item) for item in inner]
    return inner


@dataclass(frozen=True)
class ItemDifference:
    """One item that is not the same in the two dumps."""

    table: str
    key: dict[str, Any]
    kind: str  # "extra", "missing" or "changed", seen from the first dump
    attributes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    # The first dump holds the item as it was before the run (compared with `before`): an effect the
    # second dump has was not taken (a delete, a create or an update left undone), so the item is lost,
    # not done twice; without `before` nothing is known of it.
    lost: bool = False

    def describe(self, first: str = "simulation", second: str = "reference") -> str:
        key = ", ".join(f"{name}={value}" for name, value in self.key.items())
        if self.kind == "extra":
            return f"{self.table} [{key}]: only in the {first}"
        if self.kind == "missing":
            return f"{self.table} [{key}]: only in the {second}"
        changes = "; ".join(f"{name}: {a!r} vs {b!r}" for name, (a, b) in self.attributes.items())
        return f"{self.table} [{key}]: {changes} ({first} vs {second})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "key": self.key,
            "kind": self.kind,
            "attributes": {name: list(pair) for name, pair in self.attributes.items()},
        }


def _indexed(items: Iterable[Item], key_attributes: list[str]) -> dict[str, Item]:
    return {json.dumps([canonical(item.get(name)) for name in key_attributes]): canonical(item) for item in items}


def compare_table(
    table: str, first: list[Item], second: list[Item], key_attributes: list[str], before: list[Item] | None = None
) -> list[ItemDifference]:
    """Items present in only one dump, or present in both with different attributes; with `before`
    (the table before the run), each difference says whether the first dump lost the second's effect."""
    a, b = _indexed(first, key_attributes), _indexed(second, key_attributes)
    start = None if before is None else _indexed(before, key_attributes)
    differences = []
    for index in sorted(a.keys() | b.keys()):
        item = a.get(index) or b[index]
        key = {name: plain(item[name]) for name in key_attributes if name in item}
        # Lost: the first dump holds the item exactly as before the run (or, like before it, not at all).
        lost = start is not None and a.get(index) == start.get(index)
        if index not in b:
            differences.append(ItemDifference(table, key, "extra", lost=lost))
        elif index not in a:
            differences.append(ItemDifference(table, key, "missing", lost=lost))
        elif a[index] != b[index]:
            names = sorted(a[index].keys() | b[index].keys())
            changed = {
                name: (
                    None if name not in a[index] else plain(a[index][name]),
                    None if name not in b[index] else plain(b[index][name]),
                )
                for name in names
                if a[index].get(name) != b[index].get(name)
            }
            differences.append(ItemDifference(table, key, "changed", changed, lost=lost))
    return differences


@dataclass(frozen=True)
class TableEffects:
    """What happened to one table between two dumps."""

    created: int = 0
    updated: int = 0
    deleted: int = 0

    @property
    def total(self) -> int:
        return self.created + self.updated + self.deleted

    def describe(self) -> str:
        parts = [
            f"{count} {verb}"
            for count, verb in ((self.created, "created"), (self.updated, "updated"), (self.deleted, "deleted"))
            if count
        ]
        return ", ".join(parts) or "no change"


def effects_between(before: list[Item], after: list[Item], key_attributes: list[str]) -> TableEffects:
    counts = {"extra": 0, "missing": 0, "changed": 0}
    for difference in compare_table("", after, before, key_attributes):
        counts[difference.kind] += 1
    return TableEffects(created=counts["extra"], updated=counts["changed"], deleted=counts["missing"])
