"""Every tick is accounted for in the run ledger, in step with its idempotency record."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import time_machine

from clockless.fanout import FanOut
from clockless_tools.local.runtime import LocalLambdaRuntime
from tests.integration.conftest import delivery, run_tick, scan_all
from tests.jobs import HOUR, job_where

# An hourly fanned-out job: the last test delivers three hourly ticks; a tick finishes with its partitions.
JOB = job_where(period=HOUR, fanned_out=True)
TICK_SAMPLE = JOB.tick_sample
FN = JOB.function_id
TICK = JOB.sample()["scheduled_time"]


def _ledger(tables: Any) -> dict[str, dict[str, Any]]:
    """The tick entries (the fanned-out ticks' partition and lane records left out)."""
    return {
        item["scheduled_time"]["S"]: item
        for item in scan_all(tables, "LedgerTable")
        if not item["job"]["S"].endswith("#work")
    }


@pytest.fixture
def ready(tables: Any, function_env: Any) -> Any:
    function_env(FN)
    return tables


def test_a_succeeded_tick_is_recorded_with_its_summary(ready: Any, runtime: LocalLambdaRuntime) -> None:
    result = run_tick(runtime, FN, delivery(TICK_SAMPLE))

    entry = _ledger(ready)[TICK]
    assert entry["job"]["S"] == JOB.name
    assert entry["status"]["S"] == "succeeded"
    assert entry["attempts"]["N"] == "1"
    assert entry["trigger"]["S"] == "schedule"
    # The coordinator's summary beside the whole tick's, which the last partition's worker wrote.
    assert json.loads(entry["coordinator_summary"]["S"]) == result["summary"]
    assert json.loads(entry["summary"]["S"]) == {
        "found": 0,
        "applied": 0,
        "already_done": 0,
        "failed": 0,
        "partitions": 16,
    }
    assert entry["partitions_done"]["N"] == entry["partitions_total"]["N"] == "16"
    assert int(entry["expires_at"]["N"]) > 0
    # the sparse index key that makes "last success" one query
    assert entry["succeeded_job"]["S"] == JOB.name


def test_failure_then_retry_shows_failed_then_succeeded_after_two_attempts(
    ready: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("injected: table unavailable")

    with monkeypatch.context() as patched:
        patched.setattr(FanOut, "start", broken)
        with pytest.raises(RuntimeError):
            runtime.call(FN, delivery(TICK_SAMPLE, attempt=1))
    failed = _ledger(ready)[TICK]
    assert failed["status"]["S"] == "failed"
    assert "injected: table unavailable" in failed["error"]["S"]
    assert "succeeded_job" not in failed

    run_tick(runtime, FN, delivery(TICK_SAMPLE, attempt=2))

    entry = _ledger(ready)[TICK]
    assert entry["status"]["S"] == "succeeded"
    assert entry["attempts"]["N"] == "2"
    assert entry["attempt"]["N"] == "2"
    assert "error" not in entry


def test_duplicates_leave_the_ledger_as_the_first_delivery_wrote_it(ready: Any, runtime: LocalLambdaRuntime) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    before = _ledger(ready)

    runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))
    runtime.call(FN, delivery(TICK_SAMPLE, attempt=3))

    assert _ledger(ready) == before


def test_a_rerun_after_the_claim_expired_keeps_the_first_outcome(ready: Any, runtime: LocalLambdaRuntime) -> None:
    run_tick(runtime, FN, delivery(TICK_SAMPLE))
    first = _ledger(ready)[TICK]["summary"]["S"]
    expiry = int(runtime.environment(FN)["IDEMPOTENCY_EXPIRY_SECONDS"])

    with time_machine.travel(timedelta(seconds=expiry + 60), tick=True):
        rerun = run_tick(runtime, FN, delivery(TICK_SAMPLE, attempt=2))

    assert rerun["rerun"] is True
    entry = _ledger(ready)[TICK]
    assert entry["status"]["S"] == "succeeded"
    assert entry["summary"]["S"] == first
    # A fanned-out tick's re-run hands its partitions out again (each already done) and notes its
    # coordinator's result beside the first outcome.
    assert json.loads(entry["coordinator_summary"]["S"]) == rerun["summary"]


def test_each_tick_has_its_own_entry_and_sees_the_previous_success(ready: Any, runtime: LocalLambdaRuntime) -> None:
    run_tick(runtime, FN, delivery(TICK_SAMPLE, scheduled_time="2026-11-29T09:00:00Z"))
    later = run_tick(runtime, FN, delivery(TICK_SAMPLE, scheduled_time="2026-11-29T10:00:00Z"))
    # a backfilled older tick sees the success before *it*, not the newest one
    older = run_tick(runtime, FN, delivery(TICK_SAMPLE, scheduled_time="2026-11-29T08:00:00Z", trigger="backfill"))

    assert later["last_success"] == "2026-11-29T09:00:00Z"
    assert older["last_success"] is None
    ledger = _ledger(ready)
    assert sorted(ledger) == ["2026-11-29T08:00:00Z", "2026-11-29T09:00:00Z", "2026-11-29T10:00:00Z"]
    assert ledger["2026-11-29T08:00:00Z"]["trigger"]["S"] == "backfill"
