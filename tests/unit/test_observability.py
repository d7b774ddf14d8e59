"""The kit's invocation context: what every log line carries, and when a start is cold."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime

import pytest
import time_machine

from clockless.observability import ColdStart, lambda_context_keys, service_logger
from clockless_tools.local.runtime import LocalLambdaContext


def test_the_context_keys_are_the_ones_inject_lambda_context_adds() -> None:
    context = LocalLambdaContext("fn", 512, 60, "arn:aws:lambda:us-east-1:1:function:fn", aws_request_id="req-1")

    assert lambda_context_keys(context) == {
        "function_name": "fn",
        "function_memory_size": 512,
        "function_arn": "arn:aws:lambda:us-east-1:1:function:fn",
        "function_request_id": "req-1",
    }


def test_no_context_adds_no_keys_rather_than_nulls() -> None:
    assert lambda_context_keys(None) == {}


def test_only_the_first_invocation_is_cold_even_when_deliveries_race(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_INITIALIZATION_TYPE", raising=False)
    cold_start = ColdStart()
    barrier = threading.Barrier(8)
    seen: list[bool] = []

    def deliver() -> None:
        barrier.wait()
        seen.append(cold_start.take())

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(seen) == [False] * 7 + [True]
    assert cold_start.take() is False


def test_provisioned_concurrency_is_never_a_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Lambda initialises provisioned environments before any request arrives.
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "provisioned-concurrency")

    assert ColdStart().take() is False


# ------------------------------------------------------------------------------- the log line's time
# 12:00:00.750: past the half second, where Powertools' own formatter reads a second late.
THREE_QUARTERS = datetime(2026, 12, 6, 12, 0, 0, 750_000, tzinfo=UTC)


def _record(at: datetime) -> logging.LogRecord:
    record = logging.LogRecord("clockless", logging.INFO, __file__, 1, "tick executed", None, None)
    record.created = at.timestamp()
    record.msecs = int((record.created - int(record.created)) * 1000)
    return record


@pytest.mark.parametrize("millisecond", [0, 250, 499, 500, 750, 999])
def test_a_log_line_reads_the_second_and_millisecond_it_was_logged(millisecond: int) -> None:
    at = THREE_QUARTERS.replace(microsecond=millisecond * 1000)

    line = json.loads(service_logger("test").registered_formatter.format(_record(at)))

    assert line["timestamp"] == f"2026-12-06T12:00:00.{millisecond:03d}Z"


def test_a_line_logged_at_three_quarters_of_a_second_reads_so_through_the_logger(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger = service_logger("three-quarters")
    with time_machine.travel(THREE_QUARTERS, tick=False):
        logger.info("tick executed")

    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["timestamp"] == "2026-12-06T12:00:00.750Z"
