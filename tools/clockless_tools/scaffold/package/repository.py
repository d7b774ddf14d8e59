"""The job's `repository.py`: its items in DynamoDB behind the `ItemStore` the logic asks for; keyed
for one invocation a tick, or fanned out over 16 due-index shards with `partition_work.py`'s
`DuePartitionWork` appended."""

from __future__ import annotations

from typing import Final

from clockless_tools.scaffold.package.partition_work import PARTITION_WORK

REPOSITORY: Final = '''"""__JOB__'s items in DynamoDB (__STEM__Table).

This is the `ItemStore` the logic asks for__WORK_DOC__.

An item waiting to be applied carries `due_shard`, which puts it in the sparse `due-by-time`
index; applying it removes that attribute, so an applied item leaves the index and a second apply
fails its condition (already done).

What applying writes names no tick: a tick applies everything due up to its scheduled time, so an
item written late with a past due time is still applied, and which tick applies an item depends on
the order deliveries land in (a late one after the next tick). An effect that named the applying
tick would differ by that order (docs/simulation.md#what-the-verdict-means)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, Final

from pynamodb.attributes import UnicodeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from clockless import MalformedTickError, format_scheduled_time, parse_scheduled_time
from clockless.dynamo import (
    bind_table,
    bucketed_key,
    bucketed_row_key,
    decode_row,
__SHARD_FOR__    is_condition_failure,
    raw_rows,
    tenant_of,
)
__FANOUT_IMPORT__from clockless.items import FieldError
from __PACKAGE__.logic import Item

__DUE_KEYS__APPLIED: Final = "APPLIED"
# One tenant's items are spread over this many partition key values (`<tenant>#<bucket>`), so the
# biggest tenant is not held to one key's 1,000 write units per second (docs/fan-out.md#a-whale-tenant).
TENANT_BUCKETS: Final = 16


class DueIndex(GlobalSecondaryIndex["ItemModel"]):
    """Sparse: only items waiting to be applied carry `due_shard`."""

    class Meta:
        index_name = "due-by-time"
        projection = KeysOnlyProjection()

    due_shard = UnicodeAttribute(hash_key=True)
    due_at = UnicodeAttribute(range_key=True)


class ItemModel(Model):
    class Meta:
        table_name = "__PACKAGE__-table-not-bound"

    tenant_key = UnicodeAttribute(hash_key=True)  # bucketed_key(tenant, item, TENANT_BUCKETS)
    item_id = UnicodeAttribute(range_key=True)
    due_at = UnicodeAttribute()
    status = UnicodeAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_index = DueIndex()


# A missing or applied item fails this: a second apply is already done.
_STILL_DUE: Final = ItemModel.due_shard.exists()


class DynamoItemStore:
    def __init__(self, items_table: str) -> None:
        bind_table(ItemModel, items_table)

    @property
    def table(self) -> str:
        return str(ItemModel.Meta.table_name)

    def due_rows(self, *, as_of: datetime) -> Iterator[dict[str, Any]]:
        """Rows as stored: each is decoded on its own (`item_of`), so a bad one fails alone."""
__FIND_DUE__
    def row_key(self, row: Mapping[str, Any]) -> str:
        return bucketed_row_key(row, "tenant_key", "item_id")

    def item_of(self, row: Mapping[str, Any]) -> Item:
        return decode_row(ItemModel, row, self.row_key(row), _item_of)

    def apply(self, item: Item) -> bool:
        try:
            _ref(item).update(actions=_applied(), condition=_STILL_DUE)
        except UpdateError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    # The platform's own write path, used by the demo seed and tests.
    def save_items(self, items: Iterable[Item]) -> None:
        with ItemModel.batch_write() as batch:
            for item in items:
                batch.save(
                    ItemModel(
                        bucketed_key(item.tenant_id, item.item_id, TENANT_BUCKETS),
                        item.item_id,
                        due_at=format_scheduled_time(item.due_at),
                        due_shard=__DUE_SHARD_OF_ITEM__,
                    )
                )
__WORK__

def item_key(item: Item) -> str:
    return f"{item.tenant_id}#{item.item_id}"


def _applied() -> list[Any]:
    return [ItemModel.status.set(APPLIED), ItemModel.due_shard.remove()]


def _ref(item: Item) -> ItemModel:
    return ItemModel(bucketed_key(item.tenant_id, item.item_id, TENANT_BUCKETS), item.item_id)


def _item_of(found: ItemModel) -> Item:
    try:
        due_at = parse_scheduled_time(found.due_at, field="due_at")
    except MalformedTickError as error:  # a row is not a tick: name its field
        raise FieldError("due_at", error.problem) from None
    return Item(tenant_of(found.tenant_key), found.item_id, due_at)
'''


# The checks a fanned-out job's `decode` and tick parameters go through (a job without fan-out has
# neither: its rows are decoded by `item_of`).
DECODE_HELPERS: Final = """

def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"__JOB__ item: {name} must be a non-empty string, got {value!r}")
    return value


def _instant(data: Mapping[str, Any], name: str) -> datetime:
    value = data.get(name)
    problem = f"__JOB__: {name} must be a UTC instant like 2026-12-01T14:00:00Z, got {value!r}"
    if not isinstance(value, str):
        raise ValueError(problem)
    try:
        return parse_scheduled_time(value, field=name)
    except MalformedTickError:
        raise ValueError(problem) from None
"""


# How the due index is keyed: over 16 shards when the job fans out (each shard one partition of a
# tick), one constant partition when it does its work in one invocation (placeholder -> (fan-out, not)).
_DUE_INDEX: Final = {
    "__DUE_KEYS__": (
        """# Due items are spread over this many partitions of the sparse index: each GSI partition key takes
# about 1,000 WCU/s, and each shard is one partition of a fanned-out tick, run by one worker: the job's
# Shards in template.yaml's Mappings is the same number (rule shards-match-concurrency). Lowering it
# is a migration (docs/fan-out.md#changing-a-jobs-shard-count).
DUE_INDEX_SHARDS: Final = 16
DUE_PARTITIONS: Final = tuple(str(shard) for shard in range(DUE_INDEX_SHARDS))
""",
        """# Every waiting item is in one partition of the sparse index (its `due_shard` is this): the job
# applies a tick's items in one invocation. When they outgrow it, shard them
# (`clockless.dynamo.index_shard_for`) and fan the job out (docs/adding-a-job.md, "A job whose tick
# outgrows one invocation").
DUE: Final = "due"
""",
    ),
    "__FIND_DUE__": (
        """        due = ItemModel.due_at <= format_scheduled_time(as_of)
        for shard in DUE_PARTITIONS:
            yield from raw_rows(functools.partial(ItemModel.due_index.query, shard, due))
""",
        """        due = ItemModel.due_at <= format_scheduled_time(as_of)
        yield from raw_rows(functools.partial(ItemModel.due_index.query, DUE, due))
""",
    ),
    "__DUE_SHARD_OF_ITEM__": ("index_shard_for(item_key(item), DUE_INDEX_SHARDS)", "DUE"),
    "__SHARD_FOR__": ("    index_shard_for,\n", ""),
}


def repository(*, fan_out: bool) -> str:
    """The repository's text with placeholders, its due index keyed for the job's kind."""
    text = (
        REPOSITORY.replace("__FANOUT_IMPORT__", "from clockless.fanout import Page\n" if fan_out else "")
        .replace("    raw_rows,\n", "    raw_page,\n    raw_rows,\n" if fan_out else "    raw_rows,\n")
        .replace("__WORK__", PARTITION_WORK if fan_out else "")
        .replace("__WORK_DOC__", ",\nand the `DuePartitionWork` its workers apply" if fan_out else "")
    ) + (DECODE_HELPERS if fan_out else "")
    for placeholder, (fanned_out, single) in _DUE_INDEX.items():
        text = text.replace(placeholder, fanned_out if fan_out else single)
    return text
