"""What `clockless new job` writes into `functions/<package>/<package>/`: a working skeleton of a job
that applies every item due by its tick's scheduled time, once (the item leaves a sparse index
when applied). The names are placeholders (`__JOB__`, `__PACKAGE__`, `__STEM__`, `__ENV__`) that
`JobNames.fill` spells; the user renames the item and writes the domain."""

from __future__ import annotations

from typing import Final

INIT: Final = '''"""The __JOB__ job (made by `clockless new job`)."""
'''

LOGIC: Final = '''"""__JOB__: apply every item due by the tick's scheduled time, once.

Plain Python: no boto3, no environment, no clock. The store is passed in. This is the skeleton
`clockless new job` wrote: rename `Item` and write what applying one means (docs/adding-a-job.md).
Rows are decoded and applied one at a time by `each` (the kit's `JobRun.each`): a row that does
not decode or apply fails alone, and the tick settles by the job's `tolerated_failures`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from clockless.items import ItemOutcomes, apply_each


@dataclass(frozen=True, slots=True)
class Item:
    tenant_id: str
    item_id: str
    due_at: datetime


class ItemStore(Protocol):
    def due_rows(self, *, as_of: datetime) -> Iterable[Any]:
        """Rows (as stored, undecoded) of the items not yet applied whose due_at is at or before `as_of`."""
        ...

    def row_key(self, row: Any) -> str:
        """The row's key, read from its key attributes only."""
        ...

    def item_of(self, row: Any) -> Item:
        """The row decoded; raises (naming the field) for a row that is not an item."""
        ...

    def apply(self, item: Item, *, tick_key: str) -> bool:
        """Apply the item if it is still due; False if it was already applied (a duplicate)."""
        ...


@dataclass(frozen=True, slots=True)
class TickResult:
    as_of: datetime
    due: int
    applied: int
    already_done: int
    failed: int

    def as_summary(self) -> dict[str, int | str]:
        return {
            "as_of": self.as_of.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "due": self.due,
            "applied": self.applied,
            "already_done": self.already_done,
            "failed": self.failed,
        }


def apply_due(
    store: ItemStore, *, as_of: datetime, tick_key: str, each: Callable[..., ItemOutcomes] = apply_each
) -> TickResult:
    """Apply every item due by `as_of` (the tick's scheduled time, never the wall clock), each on its own."""
    outcomes = each(
        store.due_rows(as_of=as_of),
        row_key=store.row_key,
        item_of=store.item_of,
        apply=functools.partial(store.apply, tick_key=tick_key),
    )
    return TickResult(
        as_of=as_of,
        due=outcomes.found,
        applied=outcomes.applied,
        already_done=outcomes.already_done,
        failed=outcomes.failed,
    )
'''

SETTINGS: Final = """from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clockless.config import env_str


@dataclass(frozen=True, slots=True)
class __STEM__Settings:
    items_table: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> __STEM__Settings:
        return cls(items_table=env_str("__ENV___TABLE_NAME", environ))
"""

REPOSITORY: Final = '''"""__JOB__'s items in DynamoDB (__STEM__Table).

This is the `ItemStore` the logic asks for__WORK_DOC__.

An item waiting to be applied carries `due_shard`, which puts it in the sparse `due-by-time`
index; applying it removes that attribute, so an applied item leaves the index and a second apply
fails its condition (already done)."""

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
    is_condition_failure,
    raw_rows,
__SHARD_FOR__    tenant_of,
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
    applied_by = UnicodeAttribute(null=True)
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

    def apply(self, item: Item, *, tick_key: str) -> bool:
        try:
            _ref(item).update(actions=_applied(tick_key), condition=_STILL_DUE)
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


def _applied(tick_key: str) -> list[Any]:
    return [ItemModel.status.set(APPLIED), ItemModel.applied_by.set(tick_key), ItemModel.due_shard.remove()]


def _ref(item: Item) -> ItemModel:
    return ItemModel(bucketed_key(item.tenant_id, item.item_id, TENANT_BUCKETS), item.item_id)


def _item_of(found: ItemModel) -> Item:
    try:
        due_at = parse_scheduled_time(found.due_at, field="due_at")
    except MalformedTickError as error:  # a row is not a tick: name its field
        raise FieldError("due_at", error.problem) from None
    return Item(tenant_of(found.tenant_key), found.item_id, due_at)


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
'''

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

    @property
    def table(self) -> str:
        return self._store.table

    def row_key(self, row: Mapping[str, Any]) -> str:
        return self._store.row_key(row)

    def item_of(self, row: Mapping[str, Any]) -> Item:
        return self._store.item_of(row)

    def writes(self, item: Item, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]:
        update = _ref(item).get_update_kwargs_from_instance(actions=_applied(tick_key), condition=_STILL_DUE)
        return [{"Update": update}]

    def item_key(self, item: Item) -> str:
        return item_key(item)

    def encode(self, item: Item) -> dict[str, Any]:
        return {"tenant_id": item.tenant_id, "item_id": item.item_id, "due_at": format_scheduled_time(item.due_at)}

    def decode(self, data: Mapping[str, Any]) -> Item:
        return Item(_text(data, "tenant_id"), _text(data, "item_id"), _instant(data, "due_at"))


def tick_params(as_of: datetime) -> dict[str, str]:
    """What a fanned-out tick's partitions apply up to, as the partition messages carry it."""
    return {"as_of": format_scheduled_time(as_of)}


def as_of_param(params: Mapping[str, Any]) -> datetime:
    return _instant(params, "as_of")
'''

# The settings and store every handler caches, and the handler's head: one copy for both kinds.
_HANDLER_BODY: Final = """\n
@functools.cache
def settings() -> __STEM__Settings:
    return __STEM__Settings.from_env()


@functools.cache
def item_store() -> DynamoItemStore:
    return DynamoItemStore(settings().items_table)


@job.handler
def lambda_handler(run: JobRun) -> Mapping[str, Any]:
    # The tick's scheduled time, never the wall clock: a late or replayed delivery applies exactly
    # what its tick would have (rule no-wall-clock).
"""

HANDLER: Final = '''"""__JOB__: the tick's handler. It applies every item due by the tick's scheduled time."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from clockless import JobRun, ScheduledJob
from __PACKAGE__.logic import apply_due
from __PACKAGE__.repository import DynamoItemStore
from __PACKAGE__.settings import __STEM__Settings

JOB_NAME = "__JOB__"
job = ScheduledJob(JOB_NAME)

__HANDLER_BODY__    # Each row on its own (run.each): a bad row fails alone, the tick settles by tolerated_failures.
    return apply_due(item_store(), as_of=run.tick.scheduled_time, tick_key=run.tick.key, each=run.each).as_summary()
'''

FANOUT_HANDLER: Final = '''"""__JOB__: the tick's coordinator. It fans the tick out, one message per due-index shard;
`__PACKAGE__.worker` applies the items."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from clockless import JobRun, ScheduledJob
from clockless.fanout import FanOut
from __PACKAGE__.repository import DUE_PARTITIONS, DynamoItemStore, tick_params
from __PACKAGE__.settings import __STEM__Settings

JOB_NAME = "__JOB__"
job = ScheduledJob(JOB_NAME)
work = FanOut(job, partitions=DUE_PARTITIONS)

__HANDLER_BODY__    return work.start(run, params=tick_params(run.tick.scheduled_time))
'''

WORKER: Final = '''"""__JOB__'s worker: applies a fanned-out tick's partitions (SQS, one message a run)."""

from __future__ import annotations

from __PACKAGE__.handler import item_store, work
from __PACKAGE__.repository import DuePartitionWork

lambda_handler = work.worker(lambda: DuePartitionWork(item_store()))
'''

DEMO: Final = '''"""Demo data for `make run` and `clockless local seed`: items across tenants, due from two days
before the range to a day after it, so every tick finds some. Written through this job's own
repository; the simulator finds this module by its name (docs/adding-a-job.md)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timedelta

from clockless.dynamo import bucketed_key
from __PACKAGE__.logic import Item
from __PACKAGE__.repository import TENANT_BUCKETS, DynamoItemStore, ItemModel, item_key
from __PACKAGE__.settings import __STEM__Settings

ITEMS_PER_TENANT = 40


def plan_items(tenants: int, rng: random.Random, *, start: datetime, end: datetime) -> list[Item]:
    earliest, span = start - timedelta(days=2), int((end - start + timedelta(days=3)).total_seconds() // 60)
    return [
        Item(f"tenant-{t + 1:02d}", f"item-{i + 1:05d}", earliest + timedelta(minutes=rng.randint(0, span)))
        for t in range(tenants)
        for i in range(ITEMS_PER_TENANT)
    ]


def seed(*, environ: Mapping[str, str], tenants: int, rng: random.Random, start: datetime, end: datetime) -> str:
    items = plan_items(tenants, rng, start=start, end=end)
    DynamoItemStore(__STEM__Settings.from_env(environ).items_table).save_items(items)
    return f"{len(items)} items"


def bad_rows(*, environ: Mapping[str, str], start: datetime, end: datetime) -> list[str]:
    """Rows this job cannot use, for `clockless simulate --bad-rows`: a due item whose due time is no
    instant (hour 25), as another client might write it. It fails alone; returns its key as the kit
    names it in the ledger (and the work DLQ)."""
    bad = Item("tenant-bad", "item-hour-25", start - timedelta(days=2))
    # The store binds the model to the table the environment names.
    DynamoItemStore(__STEM__Settings.from_env(environ).items_table).save_items([bad])
    ItemModel(bucketed_key(bad.tenant_id, bad.item_id, TENANT_BUCKETS), bad.item_id).update(
        # Only the row just written: a key this hook got wrong fails here instead of planting nothing.
        actions=[ItemModel.due_at.set(f"{bad.due_at:%Y-%m-%d}T00:00:00+25:00")],
        condition=ItemModel.item_id.exists(),
    )
    return [item_key(bad)]
'''


# How the due index is keyed: over 16 shards when the job fans out (each shard one partition of a
# tick), one constant partition when it does its work in one invocation (placeholder -> (fan-out, not)).
_DUE_INDEX: Final = {
    "__DUE_KEYS__": (
        """# Due items are spread over this many partitions of the sparse index: each GSI partition key takes
# about 1,000 WCU/s, and each shard is one partition of a fanned-out tick.
DUE_INDEX_SHARDS: Final = 16
DUE_PARTITIONS: Final = tuple(str(shard) for shard in range(DUE_INDEX_SHARDS))
""",
        """# Every waiting item is in one partition of the sparse index (its `due_shard` is this): the job
# applies a tick's items in one invocation. When they outgrow it, shard them (`clockless.dynamo.shard_for`)
# and fan the job out (docs/adding-a-job.md, "A job whose tick outgrows one invocation").
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
    "__DUE_SHARD_OF_ITEM__": ("shard_for(item_key(item), DUE_INDEX_SHARDS)", "DUE"),
    "__SHARD_FOR__": ("    shard_for,\n", ""),
}


def package_files(*, fan_out: bool) -> dict[str, str]:
    """File name (in the package) -> text with placeholders."""
    repository = (
        REPOSITORY.replace("__FANOUT_IMPORT__", "from clockless.fanout import Page\n" if fan_out else "")
        .replace("    raw_rows,\n", "    raw_page,\n    raw_rows,\n" if fan_out else "    raw_rows,\n")
        .replace("__WORK__", PARTITION_WORK if fan_out else "")
        .replace("__WORK_DOC__", ",\nand the `DuePartitionWork` its workers apply" if fan_out else "")
    )
    for placeholder, (fanned_out, single) in _DUE_INDEX.items():
        repository = repository.replace(placeholder, fanned_out if fan_out else single)
    files = {
        "__init__.py": INIT,
        "logic.py": LOGIC,
        "settings.py": SETTINGS,
        "repository.py": repository,
        "handler.py": (FANOUT_HANDLER if fan_out else HANDLER).replace("\n__HANDLER_BODY__", _HANDLER_BODY),
        "demo.py": DEMO,
    }
    if fan_out:
        files["worker.py"] = WORKER
    return files
