"""Every tick is accounted for in the run ledger, in step with its idempotency record. Session
cleanup fans out: its coordinator claims and records the tick, its workers' finisher says
`succeeded` once every partition is done (the work queue is drained here as Lambda would)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import time_machine

from clockless.fanout import FanOut
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import Template
from tests.integration.conftest import delivery, scan_all
from tests.integration.work_queues import WorkQueues

TICK_SAMPLE = "session_cleanup/tick.json"
FN = "SessionCleanupFunction"


def _ledger(tables: Any) -> dict[str, dict[str, Any]]:
    """The job's tick entries (not its workers' partition and lane records, under `<job>#work`)."""
    items = scan_all(tables, "LedgerTable")
    return {item["scheduled_time"]["S"]: item for item in items if item["job"]["S"] == "session-cleanup"}


@pytest.fixture
def queues(
    tables: Any, function_env: Any, runtime: LocalLambdaRuntime, template: Template, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WorkQueues]:
    work = WorkQueues.of_job(runtime, template, "session-cleanup")
    function_env(FN)
    function_env(work.worker)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", runtime.endpoint)
    yield work
    work.delete()


@pytest.fixture
def ready(tables: Any, queues: WorkQueues) -> Any:
    return tables


def test_a_succeeded_tick_is_recorded_with_its_summary(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    result = runtime.call(FN, delivery(TICK_SAMPLE))
    fanned_out = _ledger(ready)["2026-11-29T09:00:00Z"]
    assert fanned_out["status"]["S"] == "started"
    assert json.loads(fanned_out["coordinator_summary"]["S"]) == result["summary"]
    assert fanned_out["partitions_total"]["N"] == "16"

    queues.drain()

    entry = _ledger(ready)["2026-11-29T09:00:00Z"]
    assert entry["job"]["S"] == "session-cleanup"
    assert entry["status"]["S"] == "succeeded"
    assert entry["attempts"]["N"] == "1"
    assert entry["trigger"]["S"] == "schedule"
    summary = {"found": 0, "applied": 0, "already_done": 0, "failed": 0, "partitions": 16}
    assert json.loads(entry["summary"]["S"]) == summary
    assert entry["summary_scope"]["S"] == "tick"
    assert entry["partitions_done"]["N"] == "16"
    assert int(entry["expires_at"]["N"]) > 0
    # the sparse index key that makes "last success" one query
    assert entry["succeeded_job"]["S"] == "session-cleanup"


def test_failure_then_retry_shows_failed_then_succeeded_after_two_attempts(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("injected: table unavailable")

    with monkeypatch.context() as patched:
        patched.setattr(FanOut, "start", broken)
        with pytest.raises(RuntimeError):
            runtime.call(FN, delivery(TICK_SAMPLE, attempt=1))
    failed = _ledger(ready)["2026-11-29T09:00:00Z"]
    assert failed["status"]["S"] == "failed"
    assert "injected: table unavailable" in failed["error"]["S"]
    assert "succeeded_job" not in failed

    runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))
    queues.drain()

    entry = _ledger(ready)["2026-11-29T09:00:00Z"]
    assert entry["status"]["S"] == "succeeded"
    assert entry["attempts"]["N"] == "2"
    assert entry["attempt"]["N"] == "2"
    assert "error" not in entry


def test_duplicates_leave_the_ledger_as_the_first_delivery_wrote_it(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()
    before = _ledger(ready)

    runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))
    runtime.call(FN, delivery(TICK_SAMPLE, attempt=3))

    assert _ledger(ready) == before


def test_a_rerun_after_the_claim_expired_keeps_the_first_outcome(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()
    first = _ledger(ready)["2026-11-29T09:00:00Z"]
    expiry = int(runtime.environment(FN)["IDEMPOTENCY_EXPIRY_SECONDS"])

    with time_machine.travel(timedelta(seconds=expiry + 60), tick=True):
        rerun = runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))
        queues.drain()

    assert rerun["rerun"] is True
    entry = _ledger(ready)["2026-11-29T09:00:00Z"]
    assert entry["status"]["S"] == "succeeded"
    assert entry["summary"] == first["summary"]
    assert entry["finished_at"] == first["finished_at"]


def test_each_tick_has_its_own_entry_and_sees_the_previous_success(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE, scheduled_time="2026-11-29T09:00:00Z"))
    queues.drain()  # its workers finish it: a success
    later = runtime.call(FN, delivery(TICK_SAMPLE, scheduled_time="2026-11-29T10:00:00Z"))
    # a backfilled older tick sees the success before *it*, not the newest one
    older = runtime.call(FN, delivery(TICK_SAMPLE, scheduled_time="2026-11-29T08:00:00Z", trigger="backfill"))

    assert later["last_success"] == "2026-11-29T09:00:00Z"
    assert older["last_success"] is None
    ledger = _ledger(ready)
    assert sorted(ledger) == ["2026-11-29T08:00:00Z", "2026-11-29T09:00:00Z", "2026-11-29T10:00:00Z"]
    assert ledger["2026-11-29T08:00:00Z"]["trigger"]["S"] == "backfill"
