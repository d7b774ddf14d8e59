"""The tests `clockless new job` writes beside the job: its logic on a fake store, and its
repository (and, fanned out, its PartitionWork) on moto with the table template.yaml declares."""

from __future__ import annotations

from typing import Final

LOGIC_TEST: Final = '''"""__JOB__'s logic on an in-memory store: what a tick applies, that a second delivery of the
same tick applies nothing twice, that a late delivery leaves the next tick the same items, that an
index that lags (stale rows, a row not yet visible) costs nothing, and that a bad row fails alone."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from __PACKAGE__.logic import Item, apply_due

TICK = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


class FakeStore:
    """Rows are items, or a dict standing for a row that does not decode."""

    def __init__(self, items: Iterable[Item | dict[str, str]]) -> None:
        self.due = {self.row_key(item): item for item in items}
        self.applied: list[str] = []

    def due_rows(self, *, as_of: datetime) -> Iterable[Any]:
        return [row for row in self.due.values() if not isinstance(row, Item) or row.due_at <= as_of]

    def row_key(self, row: Any) -> str:
        return str(row["key"]) if isinstance(row, dict) else f"{row.tenant_id}#{row.item_id}"

    def item_of(self, row: Any) -> Item:
        if not isinstance(row, Item):
            raise ValueError(f"row {row['key']}: field 'due_at' is missing")
        return row

    def apply(self, item: Item) -> bool:
        key = self.row_key(item)
        if key not in self.due:
            return False
        del self.due[key]
        self.applied.append(key)
        return True


def test_a_tick_applies_the_items_due_by_its_scheduled_time_and_no_later_one() -> None:
    store = FakeStore(
        [
            Item("t", "past", TICK - timedelta(days=1)),
            Item("t", "now", TICK),
            Item("t", "later", TICK + timedelta(seconds=1)),
        ]
    )

    result = apply_due(store, as_of=TICK)

    assert (result.due, result.applied, result.already_done, result.failed) == (2, 2, 0, 0)
    assert store.applied == ["t#past", "t#now"]


def test_the_same_tick_again_applies_nothing_twice() -> None:
    store = FakeStore([Item("t", "past", TICK - timedelta(hours=1))])
    apply_due(store, as_of=TICK)

    again = apply_due(store, as_of=TICK)

    assert (again.due, again.applied) == (0, 0)
    assert again.as_summary()["as_of"] == "2026-12-01T03:00:00Z"


def test_the_next_tick_applies_what_a_late_delivery_of_the_one_before_has_not_yet() -> None:
    # Given an item due to this tick, and the next tick's delivery landing before this one's
    store = FakeStore([Item("t", "now", TICK)])

    first = apply_due(store, as_of=TICK + timedelta(minutes=15))
    late = apply_due(store, as_of=TICK)

    # Then the item is applied once, by the next tick (everything due, not only its own window)
    assert (first.applied, late.due, late.applied) == (1, 0, 0)
    assert store.applied == ["t#now"]


class LaggingIndex(FakeStore):
    """The due index behind its table, as a global secondary index may be: it still shows `stale`
    rows (items applied since) and does not show `hidden` ones yet (written a moment ago)."""

    def __init__(self, items: Iterable[Item], *, stale: Iterable[Item], hidden: Iterable[str]) -> None:
        super().__init__(items)
        self.stale = list(stale)
        self.hidden = set(hidden)

    def due_rows(self, *, as_of: datetime) -> Iterable[Any]:
        shown = [row for row in super().due_rows(as_of=as_of) if self.row_key(row) not in self.hidden]
        return [*self.stale, *shown]


def test_an_index_that_lags_costs_nothing_and_leaves_a_row_not_yet_visible_to_the_next_tick() -> None:
    # Given an index still showing an item applied an hour ago, and not yet one written just now
    store = LaggingIndex(
        [Item("t", "due", TICK - timedelta(hours=1)), Item("t", "new", TICK)],
        stale=[Item("t", "applied", TICK - timedelta(hours=2))],
        hidden={"t#new"},
    )

    tick = apply_due(store, as_of=TICK)
    store.stale, store.hidden = [], set()
    following = apply_due(store, as_of=TICK + timedelta(minutes=15))

    # Then the stale row is counted already done (applied nothing), and the next tick applies the new one
    assert (tick.due, tick.applied, tick.already_done) == (2, 1, 1)
    assert (following.due, following.applied) == (1, 1)
    assert store.applied == ["t#due", "t#new"]


def test_a_row_that_does_not_decode_fails_alone() -> None:
    store = FakeStore([Item("t", "a", TICK), {"key": "t#bad"}, Item("t", "b", TICK)])

    result = apply_due(store, as_of=TICK)

    assert (result.due, result.applied, result.failed) == (3, 2, 1)
    assert store.applied == ["t#a", "t#b"]
'''

REPOSITORY_TEST: Final = '''"""__JOB__'s repository on moto in-process, with __STEM__Table as template.yaml
declares it: the sparse due index finds what is due, and applying an item takes it out, once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from clockless.dynamo import bucketed_key
from clockless_tools.template.model import Template
from __PACKAGE__.logic import Item
from __PACKAGE__.repository import __REPOSITORY_NAMES__
from tests.unit.partition_work_support import __SUPPORT_NAMES__

TICK = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
__TICK_KEYS__

@pytest.fixture
def client(template: Template) -> Iterator[Any]:
    with moto_tables(template, "__STEM__Table") as tables:
        ItemModel._connection = None
        yield tables
    # The model's client was made inside the mock: later tests in this process make their own.
    ItemModel._connection = None


@pytest.fixture
def store(client: Any) -> DynamoItemStore:
    return DynamoItemStore("__STEM__Table")


def test_only_items_due_by_the_tick_are_found_and_each_is_applied_once(store: DynamoItemStore) -> None:
    store.save_items([Item("t", "due", TICK - timedelta(hours=2)), Item("t", "later", TICK + timedelta(hours=2))])

    (row,) = store.due_rows(as_of=TICK)
    due = store.item_of(row)

    assert (due.item_id, store.row_key(row)) == ("due", "t#due")
    assert store.apply(due) is True
    assert store.apply(due) is False
    assert list(store.due_rows(as_of=TICK)) == []
    # What applying wrote is the item's own: the same whichever tick (or delivery) applied it
    applied = ItemModel.get(bucketed_key("t", "due", TENANT_BUCKETS), "due").attribute_values
    assert set(applied) == {"tenant_key", "item_id", "due_at", "status"}


def test_a_bad_row_is_named_by_its_table_key_and_field(store: DynamoItemStore) -> None:
    store.save_items([Item("t", "bad", TICK - timedelta(hours=1))])
    # Due by the index's order (it compares text), but not an instant.
    bad = ItemModel(bucketed_key("t", "bad", TENANT_BUCKETS), "bad")
    bad.update(actions=[ItemModel.due_at.set("2026-11-31T25:00:00Z")])

    (row,) = store.due_rows(as_of=TICK)
    with pytest.raises(ValueError, match="row __STEM__Table t#bad: field 'due_at' ") as raised:
        store.item_of(row)

    assert "malformed tick" not in str(raised.value)
__WORK_TESTS__'''

PARTITION_WORK_TESTS: Final = """

def test_the_partition_work_reads_each_shard_and_its_writes_apply_an_item_once(
    client: Any, store: DynamoItemStore
) -> None:
    items = [Item("t", f"item-{n}", TICK - timedelta(minutes=n)) for n in range(1, 21)]
    store.save_items([*items, Item("t", "later", TICK + timedelta(minutes=1))])
    work = DuePartitionWork(store)
    params = tick_params(TICK)

    found = [item for partition in DUE_PARTITIONS for item in read_all(work, partition, params, 3)[0]]

    assert sorted(item.item_id for item in found) == sorted(item.item_id for item in items)
    first = found[0]
    assert work.decode(work.encode(first)) == first
    # The same writes whichever tick applies it (a late delivery leaves it to the next tick)
    assert work.writes(first, params, TICK_KEY) == work.writes(first, params, NEXT_TICK_KEY)
    assert apply(client, work.writes(first, params, TICK_KEY)) is True
    assert apply(client, work.writes(first, params, NEXT_TICK_KEY)) is False
"""


# The keys a fanned-out tick's writes are given: the one applying, and the next tick's.
_TICK_KEYS: Final = """TICK_KEY = "__JOB__@2026-12-01T03:00:00Z"
NEXT_TICK_KEY = "__JOB__@2026-12-01T03:15:00Z"
"""


def test_files(names_package: str, *, fan_out: bool) -> dict[str, str]:
    """Path (from the project root) -> text with placeholders."""
    names = ("DUE_PARTITIONS", "TENANT_BUCKETS", "DuePartitionWork", "DynamoItemStore", "ItemModel", "tick_params")
    # One name a line (a trailing comma keeps it so): a long package name must not push it past 120.
    repository_names = "(\n" + "".join(f"    {name},\n" for name in names) + ")"
    repository_test = (
        REPOSITORY_TEST.replace("__WORK_TESTS__", PARTITION_WORK_TESTS if fan_out else "")
        .replace("__REPOSITORY_NAMES__", repository_names if fan_out else "TENANT_BUCKETS, DynamoItemStore, ItemModel")
        .replace("__SUPPORT_NAMES__", "apply, moto_tables, read_all" if fan_out else "moto_tables")
        .replace("__TICK_KEYS__", _TICK_KEYS if fan_out else "")
    )
    return {
        f"tests/unit/test_{names_package}_logic.py": LOGIC_TEST,
        f"tests/unit/test_{names_package}_repository.py": repository_test,
    }
