"""The kit's contract, on the real Powertools persistence layer against moto's server."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from clockless import JobRun, ScheduledJob, Tick, Trigger
from clockless_tools.bench import requests as expected
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaContext
from tests.integration.conftest import scan_all
from tests.unit.test_upgrade_canaries import stored_records

TICK_TIME = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)


def _event(attempt: int = 1, execution_id: str = "exec-1", **overrides: Any) -> dict[str, Any]:
    event = Tick(
        "kit-test", TICK_TIME, "arn:aws:scheduler:::schedule/default/kit", attempt, execution_id, Trigger.SCHEDULE
    ).to_event()
    event.update(overrides)
    return event


def _context(timeout_seconds: int = 60) -> LocalLambdaContext:
    return LocalLambdaContext("kit-test-fn", 512, timeout_seconds, "arn:aws:lambda:us-east-1:1:function:kit-test-fn")


def test_delivery_while_the_tick_runs_elsewhere_ends_successfully_and_does_nothing(kit_env: Any) -> None:
    job = ScheduledJob("kit-test")
    started, release = threading.Event(), threading.Event()
    runs: list[str] = []

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        runs.append(run.tick.execution_id or "")
        started.set()
        assert release.wait(10)
        return {"done": True}

    first: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: first.update(handler(_event(execution_id="a"), _context())))
    worker.start()
    assert started.wait(10)

    second = handler(_event(attempt=2, execution_id="b"), _context())
    release.set()
    worker.join(10)

    assert second["outcome"] == "duplicate_in_progress"
    assert first["outcome"] == "executed"
    assert runs == ["a"]


def test_claim_expires_with_the_attempt_so_a_timed_out_attempt_frees_the_tick(kit_env: Any) -> None:
    job = ScheduledJob("kit-test")
    seen_claims: list[dict[str, Any]] = []

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        seen_claims.extend(scan_all(kit_env, "IdempotencyTable"))
        return {}

    before_ms = int(time.time() * 1000)
    handler(_event(), _context(timeout_seconds=30))

    (claim,) = seen_claims
    assert claim["status"]["S"] == "INPROGRESS"
    in_progress_expiry = int(claim["in_progress_expiration"]["N"])
    assert before_ms + 25_000 <= in_progress_expiry <= before_ms + 31_000


def test_a_stale_in_progress_claim_is_taken_over_by_the_retry(kit_env: Any) -> None:
    job = ScheduledJob("kit-test")
    hung, release = threading.Event(), threading.Event()
    runs: list[int] = []

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        runs.append(run.tick.attempt)
        if run.tick.attempt == 1:
            hung.set()
            assert release.wait(10)
        return {}

    # Attempt 1 claims the tick with 5 s left on its clock and then hangs past its timeout.
    stuck = threading.Thread(target=handler, args=(_event(attempt=1), _context(timeout_seconds=5)))
    stuck.start()
    assert hung.wait(10)
    assert handler(_event(attempt=2), _context())["outcome"] == "duplicate_in_progress"

    with time_machine.travel(timedelta(seconds=10), tick=True):
        retried = handler(_event(attempt=3), _context())
    release.set()
    stuck.join(10)

    assert retried["outcome"] == "executed"
    assert runs == [1, 3]


def test_key_is_the_tick_not_the_attempt_nor_the_function_name(kit_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    job = ScheduledJob("kit-test")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {}

    handler(_event(attempt=1, execution_id="x"), _context())
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "renamed-function")
    again = handler(_event(attempt=2, execution_id="y", scheduled_time="2026-11-29T09:00:00-05:00"), _context())

    assert again["outcome"] == "duplicate"
    (record,) = scan_all(kit_env, "IdempotencyTable")
    assert record["id"]["S"].startswith("clockless#kit-test#")


def test_another_scheduled_time_is_another_tick(kit_env: Any) -> None:
    job = ScheduledJob("kit-test")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {}

    handler(_event(), _context())
    later = handler(_event(scheduled_time="2026-11-30T14:00:00Z"), _context())

    assert later["outcome"] == "executed"
    assert len(scan_all(kit_env, "IdempotencyTable")) == 2


def test_failure_releases_the_claim_and_emits_the_failed_metric_not_success(
    kit_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    job = ScheduledJob("kit-test")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        raise RuntimeError("boom")

    with count_requests() as requests, pytest.raises(RuntimeError, match="boom"):
        handler(_event(), _context())

    assert dict(requests.operations) == expected.failed_attempt()
    output = capsys.readouterr().out
    assert '"TickFailed"' in output
    assert '"TickSucceeded"' not in output
    assert scan_all(kit_env, "IdempotencyTable") == []


def test_success_and_duplicate_metrics(kit_env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    job = ScheduledJob("kit-test")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {}

    handler(_event(), _context())
    first = capsys.readouterr().out
    handler(_event(attempt=2), _context())
    second = capsys.readouterr().out

    assert '"TickSucceeded"' in first
    assert '"DuplicateSuppressed"' not in first
    assert '"DuplicateSuppressed"' in second
    assert '"TickSucceeded"' not in second


def test_importing_a_handler_touches_no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    from clockless_tools.local.botocore_hooks import count_requests

    job = ScheduledJob("lazy")
    with count_requests() as requests:

        @job.handler
        def handler(run: JobRun) -> dict[str, Any]:
            return {}

    assert requests.total == 0
    assert not job._store.made  # no store, no client: the first tick makes them


def test_the_last_success_is_read_only_by_a_job_that_asks_for_it(kit_env: Any) -> None:
    asking, not_asking = ScheduledJob("kit-test"), ScheduledJob("kit-test-2")

    @asking.handler
    def reads_it(run: JobRun) -> dict[str, Any]:
        return {"since": None if run.last_success is None else run.last_success.isoformat()}

    @not_asking.handler
    def ignores_it(run: JobRun) -> dict[str, Any]:
        return {}

    with count_requests() as asked:
        read = reads_it(_event(), _context())
    with count_requests() as not_asked:
        ignored = ignores_it(_event(job="kit-test-2"), _context())

    assert dict(asked.operations) == expected.first_delivery() | expected.last_success_read()
    assert read["last_success"] is None
    assert dict(not_asked.operations) == expected.first_delivery()
    assert "last_success" not in ignored


def test_a_claim_takes_exactly_the_records_powertools_runs_the_function_again_for(kit_env: Any) -> None:
    """clockless.persistence.CLAIMABLE against the table the upgrade canary holds Powertools to."""
    job = ScheduledJob("kit-test")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {}

    taken: dict[str, bool] = {}
    expected: dict[str, bool] = {}
    keys: set[str] = set()
    for day, (shape, fields) in enumerate(stored_records(time.time()).items(), start=1):
        scheduled_time = f"2026-12-{day:02d}T14:00:00Z"
        handler(_event(scheduled_time=scheduled_time), _context())
        (record,) = [item for item in scan_all(kit_env, "IdempotencyTable") if item["id"]["S"] not in keys]
        keys.add(record["id"]["S"])
        item = {
            "id": record["id"],
            "status": {"S": fields["status"]},
            "expiration": {"N": str(fields["expiry_timestamp"])},
        }
        if "in_progress_expiry_timestamp" in fields:
            item["in_progress_expiration"] = {"N": str(fields["in_progress_expiry_timestamp"])}
        if "response_data" in fields:
            item["data"] = record["data"]
        kit_env.put_item(TableName="IdempotencyTable", Item=item)

        again = handler(_event(attempt=2, execution_id="again", scheduled_time=scheduled_time), _context())
        taken[shape] = again["outcome"] == "executed"
        expected[shape] = bool(fields["runs"])

    assert taken == expected
