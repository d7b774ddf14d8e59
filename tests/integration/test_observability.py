"""What a delivery writes besides its result: log lines with the Lambda context, a cold-start metric."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from clockless import JobRun, ScheduledJob, Tick, Trigger
from clockless_tools.local.runtime import LocalLambdaContext

TRACE_HEADER = "Root=1-6749a1b0-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=0"


def _event(attempt: int) -> dict[str, Any]:
    tick = Tick(
        "obs-test",
        datetime(2026, 11, 29, 14, tzinfo=UTC),
        "arn:aws:scheduler:::schedule/default/obs",
        attempt,
        f"exec-{attempt}",
        Trigger.SCHEDULE,
    )
    return tick.to_event()


def _context(request_id: str) -> LocalLambdaContext:
    return LocalLambdaContext(
        "obs-fn", 256, 60, "arn:aws:lambda:us-east-1:1:function:obs-fn", aws_request_id=request_id
    )


def _lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.fixture
def kit_env(tables: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", "IdempotencyTable")
    monkeypatch.setenv("IDEMPOTENCY_EXPIRY_SECONDS", "3600")
    monkeypatch.setenv("LEDGER_TABLE_NAME", "LedgerTable")
    monkeypatch.setenv("LEDGER_RETENTION_DAYS", "30")
    monkeypatch.delenv("AWS_LAMBDA_INITIALIZATION_TYPE", raising=False)
    # Lambda sets this on every invocation, traced or not; the formatter reads it per record.
    monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE_HEADER)


def test_every_log_line_carries_the_lambda_context_and_only_the_first_start_is_cold(
    kit_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    job = ScheduledJob("obs-test")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        job.logger.info("working")
        return {}

    handler(_event(1), _context("req-1"))
    first = _lines(capsys.readouterr().out)
    handler(_event(2), _context("req-2"))
    second = _lines(capsys.readouterr().out)

    first_logs = [line for line in first if "message" in line]
    assert first_logs, "no log line written"
    for line in first_logs:
        assert line["cold_start"] is True
        assert line["function_name"] == "obs-fn"
        assert line["function_request_id"] == "req-1"
        assert line["function_memory_size"] == 256
        assert line["xray_trace_id"] == "1-6749a1b0-0123456789abcdef01234567"
        assert line["correlation_id"] == Tick.from_event(_event(1), expected_job="obs-test").key
    second_logs = [line for line in second if "message" in line]
    assert second_logs
    assert {line["cold_start"] for line in second_logs} == {False}
    assert {line["function_request_id"] for line in second_logs} == {"req-2"}


def test_a_cold_start_emits_one_cold_start_metric_per_environment(
    kit_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    job = ScheduledJob("obs-test")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {}

    handler(_event(1), _context("req-1"))
    first = [line for line in _lines(capsys.readouterr().out) if "ColdStart" in line]
    handler(_event(2), _context("req-2"))
    second = [line for line in _lines(capsys.readouterr().out) if "ColdStart" in line]

    (metric,) = first
    (directive,) = metric["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "ClocklessTest"
    assert directive["Dimensions"] == [["function_name", "service"]]
    assert (metric["function_name"], metric["service"], metric["ColdStart"]) == ("obs-fn", "obs-test", [1.0])
    assert second == []
