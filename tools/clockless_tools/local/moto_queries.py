"""moto's Query reading only the items under the key it asks for, as DynamoDB does.

moto answers every Query by walking every item of the table (`Table.all_items`), on the table's
own key and on a global secondary index alike, and only then keeps those under the asked key: a
cost that grows with the table and with the number of keys read, which DynamoDB does not have (it
reads the key's own partition). A fanned-out job reads many index shard keys per partition (each
a Query, most of them finding nothing: docs/fan-out.md#index-keys-and-partitions), so `make run`
spent its CPU walking tables. Once `queries_read_their_key` is installed, a Query on a table's own
hash key walks that key's items (moto keeps them by hash key already), and a Query on an index's
hash key walks the items listed under that value in a map this module keeps beside the table:
built from the table's items the first time the attribute is queried, then kept as puts and
updates change them (a deleted item's entry is dropped by the next Query of its value). The walk,
its sort, its start key, its limit and what it answers are moto's own, over a subset that holds
every item moto would keep: a listed item whose value has changed is dropped by moto's own check,
so an entry left stale costs time, never an answer. `tests/integration/test_moto_queries.py` runs
random writes and compares every Query both ways. Every embedded server installs it
(`clockless_tools.local.dynamodb.make_moto_server`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Final

_lock = threading.RLock()
# Set on moto's Table once installed.
_INSTALLED: Final = "_clockless_queries_read_their_key"
# Kept on each Table instance: attribute name -> value -> the keys of the items holding it, and
# the `items` mapping the map was built from (a table whose items were replaced is rebuilt).
_BY_VALUE: Final = "_clockless_by_value"
_BUILT_FROM: Final = "_clockless_built_from"

Key = tuple[Any, Any]  # an item's (hash key, range key or None), as moto's DynamoType values


def queries_read_their_key() -> None:
    """Patch moto's DynamoDB tables in this process, once (see the module's docstring)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    with _lock:
        if getattr(Table, _INSTALLED, False):
            return
        setattr(Table, "query", _query(Table.query))  # noqa: B010
        setattr(Table, "put_item", _reindexing_put(Table.put_item))  # noqa: B010
        setattr(DynamoDBBackend, "update_item", _reindexing_update(DynamoDBBackend.update_item))  # noqa: B010
        setattr(Table, _INSTALLED, True)


def _stored(table: Any, key: Key) -> Any:
    """The item under `key` now, or None (never creating an entry in moto's defaultdict)."""
    hash_key, range_key = key
    under = table.items.get(hash_key)
    if under is None or not table.range_key_attr:
        return under
    return under.get(range_key)


def _maps(table: Any) -> dict[str, dict[Any, dict[Key, None]]]:
    """The table's value maps; dropped when its `items` were replaced (a restore, a rollback's copy)."""
    if getattr(table, _BUILT_FROM, None) is not table.items:
        setattr(table, _BY_VALUE, {})
        setattr(table, _BUILT_FROM, table.items)
    maps: dict[str, dict[Any, dict[Key, None]]] = getattr(table, _BY_VALUE)
    return maps


def _built(table: Any, attribute: str) -> dict[Any, dict[Key, None]]:
    maps = _maps(table)
    if attribute not in maps:
        by_value: dict[Any, dict[Key, None]] = {}
        for item in table.all_items():
            value = item.attrs.get(attribute)
            if value is not None:
                by_value.setdefault(value, {})[(item.hash_key, item.range_key)] = None
        maps[attribute] = by_value
    return maps[attribute]


def _reindex(table: Any, key: Key) -> None:
    """List the item under `key` under its current values (stale entries are left: see the docstring)."""
    maps = _maps(table)
    if not maps:
        return
    item = _stored(table, key)
    if item is None:
        return
    for attribute, by_value in maps.items():
        value = item.attrs.get(attribute)
        if value is not None:
            by_value.setdefault(value, {})[key] = None


def _candidates(table: Any, hash_key: Any, index_name: str | None, conditions: list[tuple[str, Any]] | None) -> Any:
    """Every item the Query could keep, or None when this module cannot narrow it."""
    if index_name is None:
        if hash_key is None:
            return None
        under = table.items.get(hash_key)
        if under is None:
            return []
        return list(under.values()) if table.range_key_attr else [under]
    if not conditions or index_name not in {index.name for index in table.global_indexes}:
        return None
    attribute, value = conditions[0]
    listed = _built(table, attribute).get(value, {})
    found = []
    for key in list(listed):
        item = _stored(table, key)
        held = None if item is None else item.attrs.get(attribute)
        if held is None or held != value:
            del listed[key]  # moved to another value, or deleted: drop the stale entry
        else:
            found.append(item)
    return found


def _query(stock: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(stock)
    def query(table: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        candidates = _candidates(table, hash_key, index_name, kwargs.get("hash_key_conditions"))
        if candidates is None:
            return stock(table, hash_key, *args, **kwargs)
        # moto's own walk over the candidates: the instance attribute shadows the method for this call
        # only (the embedded server answers one DynamoDB request at a time: SerializedDynamoDB).
        table.all_items = lambda: candidates
        try:
            return stock(table, hash_key, *args, **kwargs)
        finally:
            del table.all_items

    return query


def _reindexing_put(stock: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(stock)
    def put_item(table: Any, *args: Any, **kwargs: Any) -> Any:
        item = stock(table, *args, **kwargs)
        if item is not None:
            _reindex(table, (item.hash_key, item.range_key))
        return item

    return put_item


def _reindexing_update(stock: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(stock)
    def update_item(backend: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        item = stock(backend, table_name, *args, **kwargs)
        if item is not None:
            _reindex(backend.get_table(table_name), (item.hash_key, item.range_key))
        return item

    return update_item
