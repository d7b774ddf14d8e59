"""`WindowPartitionWork` against moto in-process: what a fanned-out tick's worker reads from a
due-index shard and the conditional actions it applies for each due program."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, timedelta
from typing import Any

import pytest

from clockless.dynamo import index_shard_for, shard_for
from clockless.fanout.failures import OUTSIDE_RANGE, entries_of, outside_entries
from clockless_tools.template.model import Template
from tests.index_keys import keys_per_partition_fixture
from tests.unit.partition_work_support import apply, items_of, moto_tables, read_all
from window_generation import repository
from window_generation.logic import Program
from window_generation.repository import (
    DUE_INDEX_PARTITIONS,
    DUE_INDEX_SHARDS,
    MAX_WINDOWS_PER_ITEM,
    TENANT_BUCKETS,
    DynamoProgramStore,
    ProgramModel,
    WindowModel,
    WindowPartitionWork,
    due_index_keys,
    due_shard_of,
    program_key,
    programs_partition_key,
)

BUSINESS_DATE = date(2026, 12, 1)
PARAMS = {"business_date": BUSINESS_DATE.isoformat()}
TICK_KEY = "window-generation@2026-12-01T14:00:00Z"


keys_per_partition = keys_per_partition_fixture(repository, "DUE_INDEX_KEYS", DUE_INDEX_SHARDS)


@pytest.fixture
def tables(template: Template) -> Iterator[Any]:
    with moto_tables(template, "ProgramsTable", "WindowsTable") as client:
        ProgramModel._connection = None
        WindowModel._connection = None
        yield client
    # The models' clients were made inside the mock: later tests in this process make their own.
    ProgramModel._connection = None
    WindowModel._connection = None


@pytest.fixture
def store(tables: Any) -> DynamoProgramStore:
    return DynamoProgramStore("ProgramsTable", "WindowsTable")


@pytest.fixture
def work(store: DynamoProgramStore) -> WindowPartitionWork:
    return WindowPartitionWork(store)


def _shard_of(program: Program) -> str:
    """The partition that reads the program's due-index key."""
    return str(int(due_shard_of(program)) % DUE_INDEX_SHARDS)


def _fullest_shard(programs: list[Program]) -> str:
    """The shard holding the most of `programs` (a page-by-page test needs several pages of it)."""
    return Counter(_shard_of(p) for p in programs).most_common(1)[0][0]


def _windows(client: Any) -> list[tuple[str, str, str, str]]:
    items = client.scan(TableName="WindowsTable")["Items"]
    return sorted(
        (i["program_key"]["S"], i["start_date"]["S"], i["end_date"]["S"], i["created_for_tick"]["S"]) for i in items
    )


def _ends(client: Any) -> dict[str, str]:
    return {i["program_id"]["S"]: i["current_window_end"]["S"] for i in client.scan(TableName="ProgramsTable")["Items"]}


def _read_every_partition(work: WindowPartitionWork, limit: int = 100) -> list[Program]:
    found: list[Program] = []
    for partition in DUE_INDEX_PARTITIONS:
        items, _ = read_all(work, partition, PARAMS, limit)
        found.extend(items)
    return found


def test_due_programs_are_read_from_their_shard_and_nothing_else(store: DynamoProgramStore, work: Any) -> None:
    due = Program("t", "due", 7, BUSINESS_DATE)
    behind = Program("t", "behind", 7, BUSINESS_DATE - timedelta(days=9))
    ahead = Program("t", "ahead", 7, BUSINESS_DATE + timedelta(days=1))
    store.save_programs([due, behind, ahead])
    store.save_programs([Program("t", "ended", 7, BUSINESS_DATE - timedelta(days=3))], active=False)

    for program in (due, behind):
        items, _ = read_all(work, _shard_of(program), PARAMS, 10)
        assert program in items
    assert sorted(p.program_id for p in _read_every_partition(work)) == ["behind", "due"]


def test_a_program_behind_gets_its_whole_chain_and_leaves_the_due_range_in_one_transaction(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    behind = Program("t", "behind", 7, BUSINESS_DATE - timedelta(days=9))
    store.save_programs([behind])

    actions = work.writes(behind, PARAMS, TICK_KEY)

    assert [next(iter(action)) for action in actions] == ["Put", "Put", "Update"]
    assert apply(tables, actions) is True
    assert _windows(tables) == [
        ("t#behind", "2026-11-22", "2026-11-29", TICK_KEY),
        ("t#behind", "2026-11-29", "2026-12-06", TICK_KEY),
    ]
    assert _ends(tables) == {"behind": "2026-12-06"}
    assert _read_every_partition(work) == []


# at the job's own key count
@pytest.mark.parametrize("keys_per_partition", [repository.DUE_INDEX_KEYS // DUE_INDEX_SHARDS], indirect=True)
def test_a_program_stored_under_one_key_per_partition_is_read_there_and_moves_to_its_key_when_it_rolls(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    # GIVEN a program written when the job wrote one due-index key per partition (its key of 32)
    program = Program("t", "older", 7, BUSINESS_DATE - timedelta(days=9))
    store.save_programs([program])
    old = index_shard_for(program_key("t", "older"), DUE_INDEX_SHARDS)
    own = due_shard_of(program)
    assert old != own
    key = {"tenant_key": {"S": programs_partition_key("t", "older")}, "program_id": {"S": "older"}}
    tables.update_item(
        TableName="ProgramsTable",
        Key=key,
        UpdateExpression="SET due_shard = :s",
        ExpressionAttributeValues={":s": {"S": old}},
    )

    # WHEN the partition of that number reads it (its first key) and applies its roll
    assert due_index_keys(old)[0] == old
    (read,) = read_all(work, old, PARAMS, 10)[0]
    assert apply(tables, work.writes(read, PARAMS, TICK_KEY)) is True

    # THEN the roll put it under the key the current count gives it (no backfill needed)
    stored = tables.get_item(TableName="ProgramsTable", Key=key)["Item"]
    assert stored["due_shard"] == {"S": own}
    assert stored["current_window_end"] == {"S": "2026-12-06"}


def test_applying_an_item_again_changes_nothing_and_counts_as_already_done(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    due = Program("t", "due", 14, BUSINESS_DATE)
    store.save_programs([due])
    actions = work.writes(due, PARAMS, TICK_KEY)
    assert apply(tables, actions) is True
    before = (_windows(tables), _ends(tables))

    # a duplicate message, a redelivered batch, a stale read of the same program
    assert apply(tables, actions) is False
    assert apply(tables, work.writes(due, PARAMS, "another delivery")) is False

    assert (_windows(tables), _ends(tables)) == before


def test_a_program_rolled_elsewhere_since_it_was_read_is_already_done(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    due = Program("t", "due", 7, BUSINESS_DATE - timedelta(days=1))
    store.save_programs([due])
    (read,) = _read_every_partition(work)
    # the sequential path (or an older tick) rolled it by one window meanwhile
    assert store.roll_forward(due, due.next_window(), tick_key="sequential") is True

    assert apply(tables, work.writes(read, PARAMS, TICK_KEY)) is False

    assert _windows(tables) == [("t#due", "2026-11-30", "2026-12-07", "sequential")]


def test_a_program_ended_since_it_was_read_is_not_rolled(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    due = Program("t", "due", 7, BUSINESS_DATE)
    store.save_programs([due])
    (read,) = _read_every_partition(work)
    store.save_programs([due], active=False)

    assert apply(tables, work.writes(read, PARAMS, TICK_KEY)) is False

    assert _windows(tables) == []
    assert _ends(tables) == {"due": BUSINESS_DATE.isoformat()}


@pytest.mark.parametrize("keys_per_partition", [1, 4], indirect=True)
def test_a_partition_is_paged_with_cursors_and_every_program_is_read_once(
    store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    programs = [Program("t", f"p-{i:03d}", 7, BUSINESS_DATE - timedelta(days=i % 5)) for i in range(200)]
    store.save_programs(programs)
    partition = _fullest_shard(programs)
    in_partition = [p for p in programs if _shard_of(p) == partition]
    assert len(in_partition) > 7

    items, pages = read_all(work, partition, PARAMS, 3)

    assert sorted(items, key=lambda p: p.program_id) == in_partition
    # Pages of exactly 3 until the last; a full last page leaves a cursor that reads one empty page.
    assert pages in (-(-len(in_partition) // 3), len(in_partition) // 3 + 1)


@pytest.mark.parametrize("keys_per_partition", [1, 4], indirect=True)
def test_paging_while_applying_reads_each_program_once(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    # A program rolled inside the due range moves ahead in the index: it must not be read again.
    programs = [Program("t", f"p-{i:03d}", 7, BUSINESS_DATE - timedelta(days=i % 10)) for i in range(120)]
    store.save_programs(programs)
    applied: list[str] = []
    for partition in DUE_INDEX_PARTITIONS:
        cursor: dict[str, Any] | None = None
        while True:
            page = work.read(partition, PARAMS, cursor, 4)
            for program in items_of(work, page):
                assert apply(tables, work.writes(program, PARAMS, TICK_KEY)) is True
                applied.append(program.program_id)
            if page.cursor is None:
                break
            cursor = page.cursor

    assert sorted(applied) == [p.program_id for p in programs]
    windows = _windows(tables)
    assert len(windows) == sum(1 if p.current_window_end > BUSINESS_DATE - timedelta(days=7) else 2 for p in programs)
    assert all(end > BUSINESS_DATE.isoformat() for end in _ends(tables).values())


def test_a_chain_longer_than_one_transaction_holds_is_rolled_in_steps(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    far_behind = Program("t", "daily", 1, BUSINESS_DATE - timedelta(days=MAX_WINDOWS_PER_ITEM + 4))
    store.save_programs([far_behind])

    first = work.writes(far_behind, PARAMS, TICK_KEY)
    assert len(first) == MAX_WINDOWS_PER_ITEM + 1
    assert apply(tables, first) is True
    (still_due,) = _read_every_partition(work)
    assert still_due == replace(far_behind, current_window_end=BUSINESS_DATE - timedelta(days=4))
    assert apply(tables, work.writes(still_due, PARAMS, TICK_KEY)) is True

    assert len(_windows(tables)) == MAX_WINDOWS_PER_ITEM + 5
    assert _ends(tables) == {"daily": (BUSINESS_DATE + timedelta(days=1)).isoformat()}


def test_conditions_are_pynamodb_expressions_serialized_the_low_level_way(work: WindowPartitionWork) -> None:
    put, update = work.writes(Program("t", "p", 7, BUSINESS_DATE), PARAMS, TICK_KEY)

    assert put["Put"]["TableName"] == "WindowsTable"
    assert put["Put"]["Item"]["program_key"] == {"S": "t#p"}
    assert put["Put"]["ConditionExpression"] == "attribute_not_exists (#0)"
    assert put["Put"]["ExpressionAttributeNames"] == {"#0": "program_key"}
    # the tenant's bucket of the program: one key of TENANT_BUCKETS, from the program id
    assert update["Update"]["Key"] == {"tenant_key": {"S": programs_partition_key("t", "p")}, "program_id": {"S": "p"}}
    assert programs_partition_key("t", "p") == f"t#{shard_for('p', TENANT_BUCKETS)}"
    values = update["Update"]["ExpressionAttributeValues"]
    assert {"S": BUSINESS_DATE.isoformat()} in values.values()
    assert {"S": "ACTIVE"} in values.values()


def test_items_round_trip_through_their_encoding(work: WindowPartitionWork) -> None:
    program = Program("tenant-a", "p-1", 28, BUSINESS_DATE)

    assert work.decode(work.encode(program)) == program
    assert work.item_key(program) == "tenant-a#p-1"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tenant_id", "", "tenant_id must be a non-empty string"),
        ("program_id", None, "program_id must be a non-empty string"),
        ("window_length_days", 0, "window_length_days must be a whole number"),
        ("window_length_days", "7", "window_length_days must be a whole number"),
        ("current_window_end", "01/12/2026", "current_window_end must be a date"),
    ],
)
def test_a_malformed_item_is_refused_naming_the_field(
    work: WindowPartitionWork, field: str, value: Any, message: str
) -> None:
    encoded = work.encode(Program("t", "p", 7, BUSINESS_DATE)) | {field: value}

    with pytest.raises(ValueError, match=message):
        work.decode(encoded)


def test_bad_params_and_partitions_are_refused_before_any_read(work: WindowPartitionWork) -> None:
    with pytest.raises(ValueError, match="business_date must be a date"):
        work.read("0", {"business_date": "tomorrow"}, None, 10)
    beyond = len(DUE_INDEX_PARTITIONS)
    with pytest.raises(ValueError, match=rf"partition must be a due-index shard '0'..'{beyond - 1}', got '{beyond}'"):
        work.read(str(beyond), PARAMS, None, 10)


@pytest.mark.parametrize("keys_per_partition", [1, 4], indirect=True)
def test_a_worker_resuming_from_its_last_stored_cursor_never_finds_an_applied_program_again(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    programs = [Program("t", f"p-{i:03d}", 7, BUSINESS_DATE - timedelta(days=i % 9)) for i in range(150)]
    store.save_programs(programs)
    partition = _fullest_shard(programs)
    stored_cursor = work.read(partition, PARAMS, None, 2).cursor
    assert stored_cursor is not None

    # a worker applies the next page, then dies before storing its cursor
    page = work.read(partition, PARAMS, stored_cursor, 4)
    for program in items_of(work, page):
        assert apply(tables, work.writes(program, PARAMS, TICK_KEY)) is True
    resumed, _ = read_all(work, partition, PARAMS, 4, cursor=stored_cursor)

    assert len(page.items) == 4
    assert not {p.program_id for p in items_of(work, page)} & {p.program_id for p in resumed}


@pytest.mark.parametrize(
    ("length", "problem"),
    [
        ({"S": "7"}, "has the wrong type"),
        ({"N": "0"}, "must be a whole number of days >= 1"),
        (None, "must be a whole number of days >= 1, got None"),
    ],
    ids=["wrong-type", "zero", "missing"],
)
def test_a_bad_program_row_fails_alone_named_by_table_key_and_field(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork, length: Any, problem: str
) -> None:
    field = "window_length_days"
    # Given a shard with good programs and one row written by hand that is not a program.
    good = [Program("t", f"good-{n}", 7, BUSINESS_DATE - timedelta(days=1)) for n in range(40)]
    store.save_programs(good)
    bad = Program("t", "bad", 7, BUSINESS_DATE - timedelta(days=1))
    store.save_programs([bad])
    update = "REMOVE window_length_days" if length is None else "SET window_length_days = :length"
    tables.update_item(
        TableName="ProgramsTable",
        Key={"tenant_key": {"S": programs_partition_key("t", "bad")}, "program_id": {"S": "bad"}},
        UpdateExpression=update,
        **({} if length is None else {"ExpressionAttributeValues": {":length": length}}),
    )
    partition = _shard_of(bad)

    # When the kit turns the shard's rows into entries, one row at a time.
    page = work.read(partition, PARAMS, None, 100)
    entries = entries_of(work, page.items, PARAMS, TICK_KEY)

    # Then the bad row alone failed, named by its table, key and field; every good one has its writes.
    failed = [entry.failure for entry in entries if entry.failure is not None]
    assert [(f.key, f.reason, f.field) for f in failed] == [("t#bad", "decode", field)]
    assert failed[0].message.startswith(f"RowError: row ProgramsTable t#bad: field '{field}' {problem}")
    assert "malformed tick" not in failed[0].message
    assert {entry.key for entry in entries if entry.actions} == {
        program_key(p.tenant_id, p.program_id) for p in good if _shard_of(p) == partition
    }


def test_rows_whose_key_sorts_after_every_date_are_read_outside_and_fail_by_name_alone(
    tables: Any, store: DynamoProgramStore, work: WindowPartitionWork
) -> None:
    # Given a shard with due programs, one not yet due, and rows whose due-index key is no date:
    # `not-a-date` sorts after every date, and `9999-12-31` is the last date there is
    due = [Program("t", f"due-{n}", 7, BUSINESS_DATE - timedelta(days=1)) for n in range(3)]
    later = Program("t", "later", 7, BUSINESS_DATE + timedelta(days=3))
    last = Program("t", "last-date", 7, date.max)
    undated = [Program("t", f"undated-{n}", 7, BUSINESS_DATE) for n in range(2)]
    store.save_programs([*due, later, last, *undated])
    for program in undated:
        ProgramModel(programs_partition_key("t", program.program_id), program.program_id).update(
            actions=[ProgramModel.current_window_end.set("not-a-date")]
        )

    # When the kit reads every shard's rows outside the key range and turns them into entries
    outside = [row for partition in DUE_INDEX_PARTITIONS for row in work.read_outside(partition, PARAMS)]
    entries = outside_entries(work, outside, skip={program_key("t", "undated-1")})

    # Then only the undated rows are outside (the due read never returns them); each not skipped
    # fails alone, named by its key and field, with no write
    assert sorted(work.row_key(row) for row in outside) == [program_key("t", p.program_id) for p in undated]
    assert not {work.row_key(row) for row in _due_rows(work)} & {work.row_key(row) for row in outside}
    assert [(e.key, e.actions, e.failure.reason, e.failure.field) for e in entries if e.failure] == [
        (program_key("t", "undated-0"), [], "decode", "current_window_end")
    ]


def _due_rows(work: WindowPartitionWork) -> list[Any]:
    return [row for partition in DUE_INDEX_PARTITIONS for row in work.read(partition, PARAMS, None, 100).items]


def test_a_row_outside_the_range_that_decodes_fails_as_unreachable() -> None:
    # A job whose item_of accepts a key its reads never reach: the kit still fails the row, saying why.
    class Lenient:
        def row_key(self, row: Any) -> str:
            return str(row["id"])

        def item_of(self, row: Any) -> Any:
            return row

    (entry,) = outside_entries(Lenient(), [{"id": "k"}])  # type: ignore[arg-type]

    assert entry.failure is not None
    assert (entry.key, entry.actions, entry.failure.reason, entry.failure.message) == ("k", [], "decode", OUTSIDE_RANGE)
