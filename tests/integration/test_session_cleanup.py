"""Empty-session cleanup takes effect once per tick and never deletes a session in use."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from clockless import MalformedTickError
from clockless_tools.local.runtime import LocalLambdaRuntime
from session_cleanup.logic import SessionRef
from session_cleanup.repository import DynamoSessionStore
from tests.conftest import load_event
from tests.integration.conftest import delivery, scan_all

TICK_SAMPLE = "session_cleanup/tick.json"
FN = "SessionCleanupFunction"
TICK = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)  # events/session_cleanup/tick.json; grace is 120 min


def _session_ids(tables: Any) -> set[str]:
    return {item["session_id"]["S"] for item in scan_all(tables, "SessionsTable")}


@pytest.fixture
def ready(tables: Any, function_env: Any) -> Any:
    function_env(FN)
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


def test_deletes_only_sessions_still_empty_after_the_grace_period(ready: Any, runtime: LocalLambdaRuntime) -> None:
    result = runtime.call(FN, delivery(TICK_SAMPLE))

    assert result["outcome"] == "executed"
    assert result["summary"] == {
        "since": None,
        "cutoff": "2026-11-29T07:00:00Z",
        "candidates": 2,
        "sessions_deleted": 2,
        "kept_no_longer_empty": 0,
    }
    assert _session_ids(ready) == {"old-in-use", "recent-empty"}


def test_session_that_gets_its_first_exercise_after_listing_survives(
    ready: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_delete = DynamoSessionStore.delete_if_empty

    def exercise_arrives_first(self: DynamoSessionStore, session: SessionRef) -> bool:
        if session.session_id == "old-empty-1":
            self.log_exercise(session.tenant_id, session.session_id)
        return real_delete(self, session)

    monkeypatch.setattr(DynamoSessionStore, "delete_if_empty", exercise_arrives_first)
    result = runtime.call(FN, delivery(TICK_SAMPLE))

    assert result["summary"]["sessions_deleted"] == 1
    assert result["summary"]["kept_no_longer_empty"] == 1
    assert "old-empty-1" in _session_ids(ready)


def test_duplicate_retry_and_burst_delete_each_session_once(ready: Any, runtime: LocalLambdaRuntime) -> None:
    first = runtime.call(FN, delivery(TICK_SAMPLE))
    barrier = threading.Barrier(6)

    def deliver(attempt: int) -> str:
        event = delivery(TICK_SAMPLE, attempt)
        barrier.wait()
        return str(runtime.call(FN, event)["outcome"])

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(deliver, [1, 1, 2, 2, 3, 3]))

    assert first["summary"]["sessions_deleted"] == 2
    assert outcomes == ["duplicate"] * 6
    assert _session_ids(ready) == {"old-in-use", "recent-empty"}


def test_concurrent_first_deliveries_execute_once(ready: Any, runtime: LocalLambdaRuntime) -> None:
    barrier = threading.Barrier(8)

    def deliver(_: int) -> dict[str, Any]:
        event = delivery(TICK_SAMPLE)
        barrier.wait()
        return dict(runtime.call(FN, event))

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(deliver, range(8)))

    executed = [r for r in results if r["outcome"] == "executed"]
    assert len(executed) == 1
    assert executed[0]["summary"]["sessions_deleted"] == 2
    assert _session_ids(ready) == {"old-in-use", "recent-empty"}


def test_failure_mid_run_then_retry_completes_without_duplicate(
    ready: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_delete = DynamoSessionStore.delete_if_empty
    calls = {"n": 0}

    def fail_after_first_delete(self: DynamoSessionStore, session: SessionRef) -> bool:
        calls["n"] += 1
        if calls["n"] == 2:
            raise TimeoutError("injected: the function ran out of time after one delete")
        return real_delete(self, session)

    monkeypatch.setattr(DynamoSessionStore, "delete_if_empty", fail_after_first_delete)
    with pytest.raises(TimeoutError):
        runtime.call(FN, delivery(TICK_SAMPLE, attempt=1))
    assert len(_session_ids(ready)) == 3

    monkeypatch.setattr(DynamoSessionStore, "delete_if_empty", real_delete)
    retry = runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))

    assert retry["outcome"] == "executed"
    assert retry["summary"]["sessions_deleted"] == 1
    assert _session_ids(ready) == {"old-in-use", "recent-empty"}


def test_redelivery_after_idempotency_record_expired_deletes_nothing_more(
    ready: Any, runtime: LocalLambdaRuntime
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    DynamoSessionStore("SessionsTable").start_sessions(
        [SessionRef("tenant-c", "started-after-the-tick", TICK + timedelta(minutes=10))]
    )
    expiry_seconds = int(runtime.environment(FN)["IDEMPOTENCY_EXPIRY_SECONDS"])

    with time_machine.travel(timedelta(seconds=expiry_seconds + 60), tick=True):
        late = runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))

    assert late["outcome"] == "executed"
    assert late["summary"]["sessions_deleted"] == 0
    assert _session_ids(ready) == {"old-in-use", "recent-empty", "started-after-the-tick"}


def test_malformed_tick_is_rejected_and_writes_nothing(ready: Any, runtime: LocalLambdaRuntime) -> None:
    before = {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]}

    with pytest.raises(MalformedTickError, match="scheduled_time"):
        runtime.call(FN, load_event("session_cleanup/malformed.json"))

    assert {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]} == before


def test_next_tick_starts_from_the_last_success_and_heals_missed_ticks(ready: Any, runtime: LocalLambdaRuntime) -> None:
    # Given the 09:00 tick succeeded and the 10:00 and 11:00 ticks never fired
    runtime.call(FN, delivery(TICK_SAMPLE))
    DynamoSessionStore("SessionsTable").start_sessions(
        [SessionRef("tenant-c", "started-08:30", TICK - timedelta(minutes=30))]
    )

    # When the 12:00 tick runs
    event = delivery(TICK_SAMPLE) | {"scheduled_time": "2026-11-29T12:00:00Z"}
    result = runtime.call(FN, event)

    # Then it knows the last success and covers everything since it (minus the late-arrival margin)
    assert result["last_success"] == "2026-11-29T09:00:00Z"
    late_arrival = int(runtime.environment(FN)["EMPTY_SESSION_LATE_ARRIVAL_MINUTES"])
    expected_since = TICK - timedelta(hours=2) - timedelta(minutes=late_arrival)
    assert result["summary"]["since"] == expected_since.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert result["summary"]["sessions_deleted"] == 2
    assert _session_ids(ready) == {"old-in-use"}
