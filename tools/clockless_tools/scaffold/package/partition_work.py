"""What a fanned-out job's `repository.py` adds: the `DuePartitionWork` its workers apply, one
partition per due-index shard, and the tick's parameters they carry."""

from __future__ import annotations

from typing import Final

PARTITION_WORK: Final = '''

class DuePartitionWork:
    """A fanned-out tick: one partition per due-index shard, one item per due item. An item's write
    applies it only if it is still due, so an item applied since it was read counts already done."""

    def __init__(self, store: DynamoItemStore) -> None:
        # The store binds the model to the table the environment names.
        self._store = store

    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> Page[dict[str, Any]]:
        if partition not in DUE_PARTITIONS:
            raise ValueError(f"partition must be a due-index shard '0'..'{DUE_INDEX_SHARDS - 1}', got {partition!r}")
        results = ItemModel.due_index.query(
            partition,
            ItemModel.due_at <= format_scheduled_time(as_of_param(params)),
            limit=limit,
            last_evaluated_key=dict(cursor) if cursor is not None else None,
        )
        rows, next_cursor = raw_page(results)
        return Page(items=rows, cursor=next_cursor)

    def read_outside(self, partition: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The shard's due-index rows whose key sorts after every instant (`not-a-date`), which no
        tick's `<=` reaches: one Query; the kit fails each by name (clockless.fanout.ReadsOutside).
        Keys that sort before every instant are within every tick's range."""
        above = ItemModel.due_at > LAST_INSTANT_KEY
        return raw_rows(functools.partial(ItemModel.due_index.query, partition, above))

    @property
    def table(self) -> str:
        return self._store.table

    def row_key(self, row: Mapping[str, Any]) -> str:
        return self._store.row_key(row)

    def item_of(self, row: Mapping[str, Any]) -> Item:
        return self._store.item_of(row)

    def writes(self, item: Item, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]:
        # Not tick_key: which tick applies an item depends on delivery order (the module's docstring).
        update = _ref(item).get_update_kwargs_from_instance(actions=_applied(), condition=_STILL_DUE)
        return [{"Update": update}]

    def item_key(self, item: Item) -> str:
        return item_key(item)

    def encode(self, item: Item) -> dict[str, Any]:
        return {"tenant_id": item.tenant_id, "item_id": item.item_id, "due_at": format_scheduled_time(item.due_at)}

    def decode(self, data: Mapping[str, Any]) -> Item:
        return Item(_text(data, "tenant_id"), _text(data, "item_id"), _instant(data, "due_at"))


# The last key an instant can be (`parse_scheduled_time` reads years up to 9999).
LAST_INSTANT_KEY: Final = "9999-12-31T23:59:59Z"


def tick_params(as_of: datetime) -> dict[str, str]:
    """What a fanned-out tick's partitions apply up to, as the partition messages carry it."""
    return {"as_of": format_scheduled_time(as_of)}


def as_of_param(params: Mapping[str, Any]) -> datetime:
    return _instant(params, "as_of")
'''
