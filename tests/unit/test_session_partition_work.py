"""`SessionPartitionWork` against moto in-process: what a fanned-out cleanup tick's worker reads
from an empty-index shard and the conditional delete it applies for each session."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from clockless.dynamo import index_shard_for, shard_for
from clockless.fanout.failures import entries_of
from clockless_tools.template.model import Template
from session_cleanup import repository
from session_cleanup.logic import SessionRef, cleanup_range
from session_cleanup.repository import (
    EMPTY_INDEX_PARTITIONS,
    EMPTY_INDEX_SHARDS,
    TENANT_BUCKETS,
    DynamoSessionStore,
    SessionModel,
    SessionPartitionWork,
    cleanup_params,
    session_key,
    sessions_partition_key,
)
from tests.index_keys import keys_per_partition_fixture
from tests.unit.partition_work_support import apply, items_of, moto_tables, read_all

NOW = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
GRACE = timedelta(hours=2)
CUTOFF = NOW - GRACE
TICK_KEY = "session-cleanup@2026-12-01T14:00:00Z"


keys_per_partition = keys_per_partition_fixture(repository, "EMPTY_INDEX_KEYS", EMPTY_INDEX_SHARDS)


@pytest.fixture
def tables(template: Template) -> Iterator[Any]:
    with moto_tables(template, "SessionsTable") as client:
        SessionModel._connection = None
        yield client
    # The models' clients were made inside the mock: later tests in this process make their own.
    SessionModel._connection = None


@pytest.fixture
def store(tables: Any) -> DynamoSessionStore:
    return DynamoSessionStore("SessionsTable")


@pytest.fixture
def work(store: DynamoSessionStore) -> SessionPartitionWork:
    return SessionPartitionWork(store)


def _params(last_success: datetime | None = None) -> dict[str, str | None]:
    return cleanup_params(cleanup_range(now=NOW, grace=GRACE, last_success=last_success))


def _shard_of(session: SessionRef) -> str:
    """The partition that reads the session's empty-index key."""
    return str(int(index_shard_for(session_key(session), repository.EMPTY_INDEX_KEYS)) % EMPTY_INDEX_SHARDS)


def _ids(client: Any) -> list[str]:
    return sorted(i["session_id"]["S"] for i in client.scan(TableName="SessionsTable")["Items"])


def _read_every_partition(work: SessionPartitionWork, params: dict[str, str | None]) -> list[SessionRef]:
    found: list[SessionRef] = []
    for partition in EMPTY_INDEX_PARTITIONS:
        items, _ = read_all(work, partition, params, 50)
        found.extend(items)
    return found


def test_only_empty_sessions_inside_the_range_are_read(store: DynamoSessionStore, work: SessionPartitionWork) -> None:
    store.start_sessions(
        [
            SessionRef("t", "old", CUTOFF - timedelta(hours=5)),
            SessionRef("t", "at-cutoff", CUTOFF),
            SessionRef("t", "young", CUTOFF + timedelta(minutes=1)),
            SessionRef("t", "in-use", CUTOFF - timedelta(hours=1)),
            SessionRef("t", "before-last-success", CUTOFF - timedelta(hours=30)),
        ]
    )
    store.log_exercise("t", "in-use")

    unbounded = _read_every_partition(work, _params())
    since_last_success = _read_every_partition(work, _params(last_success=NOW - timedelta(hours=24)))

    assert sorted(s.session_id for s in unbounded) == ["at-cutoff", "before-last-success", "old"]
    assert sorted(s.session_id for s in since_last_success) == ["at-cutoff", "old"]


def test_an_empty_session_is_deleted_once_and_a_second_delete_is_already_done(
    tables: Any, store: DynamoSessionStore, work: SessionPartitionWork
) -> None:
    session = SessionRef("t", "old", CUTOFF - timedelta(hours=1))
    store.start_sessions([session, SessionRef("t", "other", CUTOFF - timedelta(hours=1))])
    (read,) = (s for s in _read_every_partition(work, _params()) if s.session_id == "old")
    actions = work.writes(read, _params(), TICK_KEY)

    assert apply(tables, actions) is True
    assert apply(tables, actions) is False

    assert _ids(tables) == ["other"]


def test_a_session_that_gained_an_exercise_since_it_was_read_is_kept(
    tables: Any, store: DynamoSessionStore, work: SessionPartitionWork
) -> None:
    store.start_sessions([SessionRef("t", "busy", CUTOFF - timedelta(hours=1))])
    (read,) = _read_every_partition(work, _params())
    store.log_exercise("t", "busy")

    assert apply(tables, work.writes(read, _params(), TICK_KEY)) is False

    assert _ids(tables) == ["busy"]
    assert _read_every_partition(work, _params()) == []


@pytest.mark.parametrize("keys_per_partition", [1, 4], indirect=True)
def test_a_partition_is_paged_with_cursors_and_every_session_is_read_once(
    store: DynamoSessionStore, work: SessionPartitionWork
) -> None:
    sessions = [SessionRef("t", f"s-{i:03d}", CUTOFF - timedelta(minutes=i % 7)) for i in range(200)]
    store.start_sessions(sessions)
    partition = _shard_of(sessions[0])
    in_partition = [s for s in sessions if _shard_of(s) == partition]
    assert len(in_partition) > 7

    items, pages = read_all(work, partition, _params(), 3)

    assert sorted(items, key=lambda s: s.session_id) == in_partition
    assert pages >= len(in_partition) // 3


@pytest.mark.parametrize("keys_per_partition", [1, 4], indirect=True)
def test_deleting_while_paging_reads_and_deletes_each_session_once(
    tables: Any, store: DynamoSessionStore, work: SessionPartitionWork
) -> None:
    sessions = [SessionRef("t", f"s-{i:03d}", CUTOFF - timedelta(minutes=i)) for i in range(100)]
    store.start_sessions(sessions)
    deleted: list[str] = []
    for partition in EMPTY_INDEX_PARTITIONS:
        cursor: dict[str, Any] | None = None
        while True:
            page = work.read(partition, _params(), cursor, 4)
            for session in items_of(work, page):
                assert apply(tables, work.writes(session, _params(), TICK_KEY)) is True
                deleted.append(session.session_id)
            if page.cursor is None:
                break
            cursor = page.cursor

    assert sorted(deleted) == [s.session_id for s in sessions]
    assert _ids(tables) == []


@pytest.mark.parametrize("keys_per_partition", [1, 4], indirect=True)
def test_a_worker_resuming_from_its_last_stored_cursor_never_finds_a_deleted_session_again(
    tables: Any, store: DynamoSessionStore, work: SessionPartitionWork
) -> None:
    sessions = [SessionRef("t", f"s-{i:03d}", CUTOFF - timedelta(minutes=i % 11)) for i in range(150)]
    store.start_sessions(sessions)
    partition = _shard_of(sessions[0])
    stored_cursor = work.read(partition, _params(), None, 2).cursor
    assert stored_cursor is not None

    # a worker applies the next page, then dies before storing its cursor
    page = work.read(partition, _params(), stored_cursor, 4)
    for session in items_of(work, page):
        assert apply(tables, work.writes(session, _params(), TICK_KEY)) is True
    resumed, _ = read_all(work, partition, _params(), 4, cursor=stored_cursor)

    assert len(page.items) == 4
    assert not {s.session_id for s in items_of(work, page)} & {s.session_id for s in resumed}


def test_the_delete_is_a_pynamodb_condition_serialized_the_low_level_way(work: SessionPartitionWork) -> None:
    (action,) = work.writes(SessionRef("t", "s", CUTOFF), _params(), TICK_KEY)

    assert action["Delete"]["TableName"] == "SessionsTable"
    # the tenant's bucket of the session: one key of TENANT_BUCKETS, from the session id
    assert action["Delete"]["Key"] == {"tenant_key": {"S": sessions_partition_key("t", "s")}, "session_id": {"S": "s"}}
    assert sessions_partition_key("t", "s") == f"t#{shard_for('s', TENANT_BUCKETS)}"
    assert action["Delete"]["ConditionExpression"] == "#0 = :0"
    assert action["Delete"]["ExpressionAttributeNames"] == {"#0": "exercise_count"}
    assert action["Delete"]["ExpressionAttributeValues"] == {":0": {"N": "0"}}


def test_items_and_params_round_trip_through_their_encoding(work: SessionPartitionWork) -> None:
    session = SessionRef("tenant-a", "s-1", CUTOFF)

    assert work.decode(work.encode(session)) == session
    assert work.item_key(session) == "tenant-a#s-1"
    assert _params(last_success=NOW - timedelta(hours=1)) == {
        "since": "2026-12-01T11:00:00Z",
        "cutoff": "2026-12-01T12:00:00Z",
    }
    assert _params() == {"since": None, "cutoff": "2026-12-01T12:00:00Z"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tenant_id", 3, "tenant_id must be a non-empty string"),
        ("session_id", "", "session_id must be a non-empty string"),
        ("started_at", "2026-12-01 12:00", "started_at must be a UTC instant"),
        ("started_at", None, "started_at must be a UTC instant"),
    ],
)
def test_a_malformed_item_is_refused_naming_the_field(
    work: SessionPartitionWork, field: str, value: Any, message: str
) -> None:
    encoded = work.encode(SessionRef("t", "s", CUTOFF)) | {field: value}

    with pytest.raises(ValueError, match=message):
        work.decode(encoded)


def test_bad_params_and_partitions_are_refused_before_any_read(work: SessionPartitionWork) -> None:
    with pytest.raises(ValueError, match="cutoff must be a UTC instant"):
        work.read("0", {"since": None}, None, 10)
    with pytest.raises(ValueError, match="since must be a UTC instant"):
        work.read("0", {"since": "yesterday", "cutoff": "2026-12-01T12:00:00Z"}, None, 10)
    with pytest.raises(ValueError, match=r"partition must be an empty-index shard '0'..'15', got 'x'"):
        work.read("x", _params(), None, 10)


def test_a_session_row_whose_start_is_not_an_instant_fails_alone_named_by_its_row(
    tables: Any, store: DynamoSessionStore, work: SessionPartitionWork
) -> None:
    # Given empty sessions due for deletion, one of them written by hand with a start that sorts
    # as due but is no instant (hour 25).
    good = [SessionRef("t", f"good-{n}", CUTOFF - timedelta(hours=1)) for n in range(40)]
    bad = SessionRef("t", "bad", CUTOFF - timedelta(hours=1))
    store.start_sessions([*good, bad])
    tables.update_item(
        TableName="SessionsTable",
        Key={"tenant_key": {"S": sessions_partition_key("t", "bad")}, "session_id": {"S": "bad"}},
        UpdateExpression="SET started_at = :start",
        ExpressionAttributeValues={":start": {"S": f"{CUTOFF:%Y-%m-%d}T00:00:00+25:00"}},
    )
    partition = _shard_of(bad)

    page = work.read(partition, _params(), None, 100)
    entries = entries_of(work, page.items, _params(), TICK_KEY)

    failed = [entry.failure for entry in entries if entry.failure is not None]
    assert [(f.key, f.reason, f.field) for f in failed] == [("t#bad", "decode", "started_at")]
    assert failed[0].message.startswith("RowError: row SessionsTable t#bad: field 'started_at' ")
    assert "malformed tick" not in failed[0].message
    assert {entry.key for entry in entries if entry.actions} == {
        f"t#{s.session_id}" for s in good if _shard_of(s) == partition
    }
