"""Empty-session cleanup takes effect once per tick and never deletes a session in use: the
coordinator works out the tick's range and fans it out over the 16 empty-index shards, the
workers delete each session only if it is still empty, up to 99 to a transaction."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from typer.testing import CliRunner

from clockless import MalformedTickError
from clockless.dynamo import index_shard_for
from clockless.fanout.settings import DEFAULT_PAGE_SIZE
from clockless_tools.bench import requests as expected
from clockless_tools.cli.app import app
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaRuntime
from session_cleanup import repository
from session_cleanup.logic import SessionRef
from session_cleanup.repository import (
    EMPTY_INDEX_SHARDS,
    DynamoSessionStore,
    SessionModel,
    SessionPartitionWork,
    session_key,
    sessions_partition_key,
)
from tests.conftest import load_event
from tests.index_keys import keys_per_partition_fixture
from tests.integration.conftest import delivery, scan_all
from tests.integration.work_queues import WorkQueues

TICK_SAMPLE = "session_cleanup/tick.json"
FN = "SessionCleanupFunction"
WORKER = "SessionCleanupWorkerFunction"
TICK = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)  # events/session_cleanup/tick.json; grace is 120 min
TICK_TIME = "2026-11-29T09:00:00Z"
FANNED_OUT = {"fan_out": {"partitions": EMPTY_INDEX_SHARDS}, "since": None, "cutoff": "2026-11-29T07:00:00Z"}


def _session_ids(tables: Any) -> set[str]:
    return {item["session_id"]["S"] for item in scan_all(tables, "SessionsTable")}


def _tick_entry(tables: Any, scheduled_time: str = TICK_TIME) -> dict[str, Any]:
    (entry,) = (
        item
        for item in scan_all(tables, "LedgerTable")
        if item["job"]["S"] == "session-cleanup" and item["scheduled_time"]["S"] == scheduled_time
    )
    return entry


def _settled(tables: Any, scheduled_time: str = TICK_TIME) -> dict[str, int]:
    entry = _tick_entry(tables, scheduled_time)
    assert entry["status"]["S"] == "succeeded"
    summary: dict[str, int] = json.loads(entry["summary"]["S"])
    return summary


def _counts(found: int, applied: int, already_done: int = 0) -> dict[str, int]:
    return {
        "found": found,
        "applied": applied,
        "already_done": already_done,
        "failed": 0,
        "partitions": EMPTY_INDEX_SHARDS,
    }


keys_per_partition = keys_per_partition_fixture(repository, "EMPTY_INDEX_KEYS", EMPTY_INDEX_SHARDS)


@pytest.fixture
def queues(
    tables: Any, function_env: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WorkQueues]:
    function_env(FN)
    function_env(WORKER)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", runtime.endpoint)
    work_queues = WorkQueues(runtime, WORKER, "SessionCleanupWorkQueue", "SessionCleanupWorkDeadLetterQueue")
    yield work_queues
    work_queues.delete()


@pytest.fixture
def ready(tables: Any, queues: WorkQueues) -> Any:
    store = DynamoSessionStore("SessionsTable")
    store.start_sessions(
        [
            SessionRef("tenant-a", "old-empty-1", TICK - timedelta(hours=5)),
            SessionRef("tenant-b", "old-empty-2", TICK - timedelta(hours=2)),  # exactly at the grace limit
            SessionRef("tenant-a", "old-in-use", TICK - timedelta(hours=4)),
            SessionRef("tenant-b", "recent-empty", TICK - timedelta(minutes=30)),
        ]
    )
    store.log_exercise("tenant-a", "old-in-use")
    return tables


def test_deletes_only_sessions_still_empty_after_the_grace_period(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    result = runtime.call(FN, delivery(TICK_SAMPLE))

    assert result["outcome"] == "executed"
    assert result["summary"] == FANNED_OUT
    assert len(_session_ids(ready)) == 4
    assert queues.drain() == EMPTY_INDEX_SHARDS
    assert _session_ids(ready) == {"old-in-use", "recent-empty"}
    assert _settled(ready) == _counts(found=2, applied=2)


def test_session_that_gets_its_first_exercise_after_listing_survives(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_writes = SessionPartitionWork.writes

    def exercise_arrives_first(self: SessionPartitionWork, session: SessionRef, *args: Any) -> Any:
        if session.session_id == "old-empty-1":
            DynamoSessionStore("SessionsTable").log_exercise(session.tenant_id, session.session_id)
        return real_writes(self, session, *args)

    monkeypatch.setattr(SessionPartitionWork, "writes", exercise_arrives_first)
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()

    assert "old-empty-1" in _session_ids(ready)
    assert "old-empty-2" not in _session_ids(ready)
    # kept because it is no longer empty: its condition failed, so it counts as already done
    assert _settled(ready) == _counts(found=2, applied=1, already_done=1)


def test_duplicate_retry_and_burst_delete_each_session_once(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()
    barrier = threading.Barrier(6)

    def deliver(attempt: int) -> str:
        event = delivery(TICK_SAMPLE, attempt)
        barrier.wait()
        return str(runtime.call(FN, event)["outcome"])

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(deliver, [1, 1, 2, 2, 3, 3]))

    assert outcomes == ["duplicate"] * 6
    assert queues.drain() == 0
    assert _session_ids(ready) == {"old-in-use", "recent-empty"}


def test_duplicate_partition_messages_delete_each_session_once(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    for body in queues.bodies(queues.queue):
        queues.client.send_message(QueueUrl=queues.url(queues.queue), MessageBody=json.dumps(body))

    assert queues.drain() == 2 * EMPTY_INDEX_SHARDS

    assert _session_ids(ready) == {"old-in-use", "recent-empty"}
    assert _settled(ready) == _counts(found=2, applied=2)


def test_concurrent_first_deliveries_fan_out_once(ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues) -> None:
    barrier = threading.Barrier(8)

    def deliver(_: int) -> dict[str, Any]:
        event = delivery(TICK_SAMPLE)
        barrier.wait()
        return dict(runtime.call(FN, event))

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(deliver, range(8)))

    assert [r["outcome"] for r in results].count("executed") == 1
    assert queues.drain() == EMPTY_INDEX_SHARDS
    assert _session_ids(ready) == {"old-in-use", "recent-empty"}


def test_a_worker_run_that_fails_mid_partition_is_retried_after_the_first_backoff(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_writes = SessionPartitionWork.writes

    def timed_out_on_one(self: SessionPartitionWork, session: SessionRef, *args: Any) -> Any:
        if session.session_id == "old-empty-2":
            raise TimeoutError("injected: the worker ran out of time")
        return real_writes(self, session, *args)

    runtime.call(FN, delivery(TICK_SAMPLE, attempt=1))
    with monkeypatch.context() as patched:
        patched.setattr(SessionPartitionWork, "writes", timed_out_on_one)
        queues.drain()
    (failed,) = [answer["error"] for answer in queues.answers if "error" in answer]
    assert "injected: the worker ran out of time" in failed
    assert _session_ids(ready) == {"old-empty-2", "old-in-use", "recent-empty"}
    assert _tick_entry(ready)["status"]["S"] == "started"

    # The failed run released its lease and asked for its message back after 10 s (the kit's first
    # backoff, ChangeMessageVisibility), not the queue's 1,800 s visibility timeout.
    with time_machine.travel(timedelta(seconds=11), tick=True):
        assert queues.drain() == 1

    assert _session_ids(ready) == {"old-in-use", "recent-empty"}
    assert _settled(ready) == _counts(found=2, applied=2)


def test_redelivery_after_idempotency_record_expired_deletes_nothing_more(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()
    DynamoSessionStore("SessionsTable").start_sessions(
        [SessionRef("tenant-c", "started-after-the-tick", TICK + timedelta(minutes=10))]
    )
    expiry_seconds = int(runtime.environment(FN)["IDEMPOTENCY_EXPIRY_SECONDS"])

    with time_machine.travel(timedelta(seconds=expiry_seconds + 60), tick=True):
        late = runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))
        assert late["outcome"] == "executed"
        assert queues.drain() == EMPTY_INDEX_SHARDS

    assert _session_ids(ready) == {"old-in-use", "recent-empty", "started-after-the-tick"}
    assert _settled(ready) == _counts(found=2, applied=2)


def test_malformed_tick_is_rejected_and_writes_nothing(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    before = {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]}

    with pytest.raises(MalformedTickError, match="scheduled_time"):
        runtime.call(FN, load_event("session_cleanup/malformed.json"))

    assert {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]} == before
    assert queues.bodies(queues.queue) == []


def test_next_tick_starts_from_the_last_success_and_heals_missed_ticks(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    # Given the 09:00 tick succeeded (its partitions all done) and the 10:00 and 11:00 ticks never fired
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()
    DynamoSessionStore("SessionsTable").start_sessions(
        [SessionRef("tenant-c", "started-08:30", TICK - timedelta(minutes=30))]
    )

    # When the 12:00 tick runs
    event = delivery(TICK_SAMPLE) | {"scheduled_time": "2026-11-29T12:00:00Z"}
    result = runtime.call(FN, event)
    queues.drain()

    # Then it knows the last success and covers everything since it (minus the late-arrival margin)
    assert result["last_success"] == "2026-11-29T09:00:00Z"
    late_arrival = int(runtime.environment(FN)["EMPTY_SESSION_LATE_ARRIVAL_MINUTES"])
    expected_since = TICK - timedelta(hours=2) - timedelta(minutes=late_arrival)
    assert result["summary"]["since"] == expected_since.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _session_ids(ready) == {"old-in-use"}
    assert _settled(ready, "2026-11-29T12:00:00Z") == _counts(found=2, applied=2)


@pytest.mark.parametrize("keys_per_partition", [2], indirect=True)
def test_requests_per_tick_coordinator_flat_and_workers_per_partition(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues, keys_per_partition: int
) -> None:
    # Given old empty sessions under both keys of one partition, besides the seed's two
    keys = repository.EMPTY_INDEX_KEYS
    ids = (f"s-{i:04d}" for i in range(10_000))
    both = [
        next(s for s in ids if index_shard_for(f"tenant-c#{s}", keys) == k) for k in ("3", str(3 + EMPTY_INDEX_SHARDS))
    ]
    DynamoSessionStore("SessionsTable").start_sessions(
        [SessionRef("tenant-c", s, TICK - timedelta(hours=3)) for s in both]
    )
    queues.url(queues.queue)
    with count_requests() as coordinator:
        runtime.call(FN, delivery(TICK_SAMPLE))
    with count_requests() as workers:
        queues.drain()

    # The coordinator reads no session, and its logic reads the last success (the range starts
    # there); each partition run reads its keys and the last settles the tick: counted as the one
    # table of requests (docs/tick-flow.md) says.
    assert dict(coordinator.operations) == expected.coordinator(EMPTY_INDEX_SHARDS, reads_last_success=True)
    due = [
        index_shard_for(f"{t}#{s}", keys)
        for t, s in (("tenant-a", "old-empty-1"), ("tenant-b", "old-empty-2"), *(("tenant-c", s) for s in both))
    ]
    items = expected.items_by_key(due, EMPTY_INDEX_SHARDS, keys)
    assert sum(map(sum, items)) == 4
    polled = ("ReceiveMessage", "DeleteMessage")
    assert {op: n for op, n in workers.operations.items() if op not in polled} == expected.tick_workers(
        items, actions_per_item=1, page_size=DEFAULT_PAGE_SIZE, outside_queries=1
    )


def test_rows_whose_key_sorts_outside_every_instant_are_found_on_both_sides_and_fail_by_name(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    # Given the 09:00 tick succeeded, so the 10:00 tick's range has a start (its due read is a
    # BETWEEN), and two empty sessions whose start another client wrote as no instant: one sorting
    # after every instant, one before
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()
    store = DynamoSessionStore("SessionsTable")
    outside = {"session-not-a-date": "not-a-date", "session-spaced": " 2026-11-29T04:00:00Z"}
    for session_id, started_at in outside.items():
        store.start_sessions([SessionRef("tenant-bad", session_id, TICK - timedelta(hours=5))])
        row = SessionModel(sessions_partition_key("tenant-bad", session_id), session_id)
        row.update(actions=[SessionModel.started_at.set(started_at)])

    # When the 10:00 tick runs
    hour = "2026-11-29T10:00:00Z"
    runtime.call(FN, delivery(TICK_SAMPLE) | {"scheduled_time": hour})
    queues.drain()

    # Then it fails naming both rows and the field, as for a row inside its range that does not decode
    entry = _tick_entry(ready, hour)
    assert entry["status"]["S"] == "failed"
    for session_id in outside:
        assert f"tenant-bad#{session_id}" in entry["failures"]["S"]
    assert "started_at" in entry["failures"]["S"]
    assert json.loads(entry["summary"]["S"])["failed"] == 2


# Three fanned-out ticks and two redrives (about 4 s): CI's slow suite; `make test`'s bad-rows night
# (test_simulate_bad_rows) has session cleanup's later ticks fail on its planted row.
@pytest.mark.slow
def test_a_bad_row_fails_every_tick_whose_range_holds_it_until_fixed_and_one_redrive_settles_them(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues, dynamodb_endpoint: str
) -> None:
    """The contract for a job that works on the range since its last success (docs/tick-contract.md,
    "A bad row in a range"): a failed tick does not move the range's start, so every later tick
    meets the bad row again and fails naming it, until the row is fixed; the next tick then applies
    it, and one `clockless work redrive` settles every tick that failed on it (each replay finds the
    row gone: already done). A second redrive changes nothing."""
    # Given an empty session whose start sorts as due but is no instant (hour 25), as another client
    # might write it: `started_at` is read back from the row, and the row does not decode.
    bad = SessionRef("tenant-bad", "session-hour-25", TICK - timedelta(hours=5))
    store = DynamoSessionStore("SessionsTable")
    store.start_sessions([bad])
    row = SessionModel(sessions_partition_key(bad.tenant_id, bad.session_id), bad.session_id)
    row.update(actions=[SessionModel.started_at.set("2026-11-29T04:00:00+25:00")])
    hours = ["2026-11-29T09:00:00Z", "2026-11-29T10:00:00Z", "2026-11-29T11:00:00Z"]

    # When the 09:00 and 10:00 ticks run, the row fixed, then the 11:00 tick
    for hour in hours[:2]:
        runtime.call(FN, delivery(TICK_SAMPLE) | {"scheduled_time": hour})
        queues.drain()
    failed = [_tick_entry(ready, hour) for hour in hours[:2]]
    row.update(actions=[SessionModel.started_at.set("2026-11-29T04:00:00+00:00")])
    runtime.call(FN, delivery(TICK_SAMPLE) | {"scheduled_time": hours[2]})
    queues.drain()

    # Then both earlier ticks failed on the same row, its items messages wait in the work DLQ, and
    # the 11:00 tick (its range still from no success) deleted it with the other due sessions (by
    # 11:00 the one started at 08:30 is past its grace too)
    assert [entry["status"]["S"] for entry in failed] == ["failed", "failed"]
    assert all(session_key(bad) in entry["failures"]["S"] for entry in failed)
    assert [letter["keys"] for letter in queues.bodies(queues.dead_letter_queue)] == [[session_key(bad)]] * 2
    assert _session_ids(ready) == {"old-in-use"}
    assert _settled(ready, hours[2]) == _counts(found=2, applied=2)

    # When the operator redrives the work DLQ (the one command), twice
    redrive = ["work", "redrive", "session-cleanup", "--endpoint", dynamodb_endpoint]
    first, second = (CliRunner().invoke(app, redrive) for _ in range(2))

    # Then every tick is succeeded, the replayed row counted already done, and the second changed nothing
    assert first.exit_code == 0, first.output
    assert "moved 2 message(s)" in first.stdout
    assert second.exit_code == 0, second.output
    assert "moved 0 message(s)" in second.stdout
    for hour in hours[:2]:
        summary = _settled(ready, hour)
        assert (summary["failed"], summary["already_done"]) == (0, 1), hour
        assert "failures" not in _tick_entry(ready, hour)
