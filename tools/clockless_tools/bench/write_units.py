"""What a DynamoDB write consumes, in write units, computed from each item before and after it.

moto reports no per-item write capacity, so the meter reads the items a write names from moto's
state in this process just before the request is sent and just after it is answered, and prices
them the way DynamoDB's developer guide does ("Capacity unit consumption for write operations",
"Capacity management for transactions", "Provisioned throughput considerations for GSIs"):

- a write costs 1 unit per KB (1,024 bytes, rounded up, at least 1) of the larger of the item
  before and after it; a write whose condition fails still costs that, for the item as it is;
- in a `TransactWriteItems` every action costs twice that (prepare and commit);
- every global secondary index whose entry the write puts, changes or removes costs 1 unit per KB
  of the projected entry, and 2 writes (a delete and a put) when the write moves the entry's key;
- a cancelled transaction: the guide does not say what it consumes. It is counted apart
  (`cancelled_write_units`), priced as if it had committed on the items as they were, so it is
  an upper bound and never mixed into the committed figure.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.endpoint import Endpoint

from clockless_tools.local.units import (
    IndexShape,
    MotoTables,
    index_write_units,
    moto_dynamodb_backend,
    projected_entry,
    write_actions,
    write_units_of,
)

__all__ = ["IndexShape", "WriteTally", "index_write_units", "meter_writes", "projected_entry", "write_units_of"]

Key = tuple[str, str]  # (table, canonical JSON of the key)


@dataclass
class WriteTally:
    """Write units of everything sent while a `meter_writes` was active."""

    write_units: float = 0.0  # base tables, committed or conditional-failed single writes
    index_write_units: float = 0.0  # global secondary indexes
    cancelled_write_units: float = 0.0  # cancelled transactions, priced as if committed (upper bound)
    items_written: int = 0
    by_table: dict[str, float] = field(default_factory=dict)  # committed units per table
    by_index: dict[str, float] = field(default_factory=dict)  # per "table/index"
    # committed base-table units per partition key value, "table|value" (where hot keys show)
    by_partition_key: dict[str, float] = field(default_factory=dict)
    # committed base-table units per item, "table|partition key|sort key" (which records of a key took them)
    by_item: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.write_units + self.index_write_units


class WriteMeter:
    def __init__(self, backend: Any) -> None:
        self.tally = WriteTally()
        self._tables = MotoTables(backend)
        self._lock = threading.Lock()

    def before(self, operation: str, body: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any], Any]]:
        touched = []
        for kind, action in write_actions(operation, body):
            table = str(action["TableName"])
            key = self._tables.key_of(table, kind, action)
            touched.append((kind, table, key, self._tables.item(table, key)))
        return touched

    def after(
        self, operation: str, body: Mapping[str, Any], touched: list[tuple[str, str, dict[str, Any], Any]], ok: bool
    ) -> None:
        transactional = operation == "TransactWriteItems"
        factor = 2 if transactional else 1
        base = index = cancelled = 0.0
        tables: dict[str, float] = {}
        indexes_written: dict[str, float] = {}
        keys: dict[str, float] = {}
        items: dict[str, float] = {}
        for (kind, table, key, before), (_, action) in zip(touched, write_actions(operation, body), strict=True):
            table_keys, indexes = self._tables.shape(table)
            if not ok:
                # A failed condition leaves the item; a single write still pays for it (or for the
                # Put it would have written, if larger).
                would_be = action.get("Item") if kind == "Put" else None
                units = factor * write_units_of(before, would_be)
                if transactional:
                    cancelled += units
                else:
                    base += units
                continue
            after = self._tables.item(table, key)
            units = factor * write_units_of(before, None if kind == "ConditionCheck" else after)
            base += units
            tables[table] = tables.get(table, 0.0) + units
            partition_key = f"{table}|{_plain(key[table_keys[0]])}"
            keys[partition_key] = keys.get(partition_key, 0.0) + units
            item = f"{partition_key}|{_plain(key[table_keys[1]]) if len(table_keys) > 1 else ''}"
            items[item] = items.get(item, 0.0) + units
            if kind == "ConditionCheck":
                continue
            for shape in indexes:
                on_index = index_write_units(before, after, shape, table_keys)
                index += on_index
                name = f"{table}/{shape.name}"
                indexes_written[name] = indexes_written.get(name, 0.0) + on_index
        with self._lock:
            self.tally.write_units += base
            self.tally.index_write_units += index
            self.tally.cancelled_write_units += cancelled
            self.tally.items_written += len(touched) if ok else 0
            for name, on_table in tables.items():
                self.tally.by_table[name] = self.tally.by_table.get(name, 0.0) + on_table
            for name, on_key in keys.items():
                self.tally.by_partition_key[name] = self.tally.by_partition_key.get(name, 0.0) + on_key
            for name, on_item in items.items():
                self.tally.by_item[name] = self.tally.by_item.get(name, 0.0) + on_item
            for name, index_units in indexes_written.items():
                if index_units:
                    self.tally.by_index[name] = self.tally.by_index.get(name, 0.0) + index_units


def _plain(value: Any) -> str:
    """A key attribute's value as text ({"S": "x"} -> "x")."""
    return str(next(iter(value.values()))) if isinstance(value, Mapping) and len(value) == 1 else str(value)


@contextlib.contextmanager
def meter_writes() -> Iterator[WriteTally]:
    """Write units of every DynamoDB write sent while active, to moto's server in this process."""
    meter = WriteMeter(moto_dynamodb_backend())
    original = getattr(Endpoint, "_send")  # noqa: B009 - private on purpose: the one place every request passes

    def metered_send(self: Endpoint, request: Any) -> Any:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else str(target)
        operation = target.rsplit(".", 1)[-1] if target.startswith("DynamoDB_") else ""
        body: Mapping[str, Any] = json.loads(request.body or b"{}") if operation else {}
        touched = meter.before(operation, body) if write_actions(operation, body) else []
        response = original(self, request)
        if touched:
            meter.after(operation, body, touched, ok=response.status_code == 200)
        return response

    setattr(Endpoint, "_send", metered_send)  # noqa: B010
    try:
        yield meter.tally
    finally:
        setattr(Endpoint, "_send", original)  # noqa: B010
