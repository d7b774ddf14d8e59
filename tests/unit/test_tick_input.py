"""Regressions of issue 11, findings 3 and 4: a tick from the future, and values the parser let
through (three-digit years, overflowing offsets and attempts, giant ids, off-minute offsets, long
echoes). Each failed on main before the tick got its bounds; they use only what main had."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from clockless import MalformedTickError, Tick, format_scheduled_time
from job_trigger.logic import BadTickRequest, tick_body
from tests.conftest import load_event
from tests.jobs import DAY, HOUR, job_where

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
NOW = datetime(2026, 11, 29, 9, 20, 17, tzinfo=UTC)
WINDOW = timedelta(minutes=15)
JOB = HOURLY_JOB.name
# Longer than anything an error message may quote of a value.
MESSAGE_LIMIT = 400


@pytest.fixture(autouse=True)
def clock() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def _event(**changes: Any) -> dict[str, Any]:
    return load_event(f"{HOURLY_JOB.package}/tick.json") | changes


def _malformed(event: dict[str, Any]) -> MalformedTickError:
    with pytest.raises(MalformedTickError) as raised:
        Tick.from_event(event, expected_job=JOB)
    return raised.value


# ---------------------------------------------------------------------------------------------- finding 3
@pytest.mark.parametrize(
    "ahead", [timedelta(minutes=1), timedelta(hours=3), timedelta(days=400)], ids=["1-minute", "3-hours", "400-days"]
)
def test_a_tick_from_the_future_is_malformed_naming_scheduled_time(ahead: timedelta) -> None:
    scheduled = format_scheduled_time((NOW + ahead).replace(second=0))

    error = _malformed(_event(scheduled_time=scheduled))

    assert error.field == "scheduled_time"
    assert "in the future" in str(error)


def test_the_trigger_accepts_no_minute_ahead_of_now() -> None:
    # Inside the old 15-minute window either way, which let a press delete sessions still in grace.
    body = json.dumps({"scheduled_time": "2026-11-29T09:21:00Z"})

    with pytest.raises(BadTickRequest) as raised:
        tick_body(body, now=NOW, window=WINDOW)

    assert raised.value.field == "scheduled_time"
    assert "in the future" in str(raised.value)


# ---------------------------------------------------------------------------------------------- finding 4
def test_a_year_below_1000_is_malformed_instead_of_written_unpadded() -> None:
    error = _malformed(_event(scheduled_time="0002-01-01T01:00:00Z"))

    assert error.field == "scheduled_time"
    assert "years 1000 to 9999" in str(error)


def test_scheduled_times_are_always_spelled_with_four_digit_years() -> None:
    assert format_scheduled_time(datetime(2, 1, 1, 1, tzinfo=UTC)) == "0002-01-01T01:00:00Z"
    assert format_scheduled_time(datetime(999, 12, 31, 23, 59, tzinfo=UTC)) == "0999-12-31T23:59:00Z"


@pytest.mark.parametrize(
    "text",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:00-01:00", "1000-01-01T00:00:00+00:01"],
    ids=["year-1-east", "year-9999-west", "year-1000-to-999"],
)
def test_an_offset_that_leaves_the_four_digit_years_is_malformed_never_an_overflow(text: str) -> None:
    error = _malformed(_event(scheduled_time=text))

    assert error.field == "scheduled_time"


@pytest.mark.parametrize(
    "attempt",
    [float("inf"), 1.5, 2.0, 10**30, "99999999999", " 1"],
    ids=["1e400", "fraction", "float", "huge-int", "huge-string", "space"],
)
def test_an_attempt_that_is_not_a_small_positive_integer_is_malformed(attempt: Any) -> None:
    error = _malformed(_event(attempt=attempt))

    assert error.field == "attempt"


def test_a_json_attempt_of_1e400_is_malformed_never_an_overflow() -> None:
    event = json.loads(json.dumps(_event()).replace('"attempt": "1"', '"attempt": 1e400'))

    assert _malformed(event).field == "attempt"


@pytest.mark.parametrize("field", ["execution_id", "schedule_arn", "job"])
def test_a_giant_id_is_malformed_and_not_copied_into_the_message(field: str) -> None:
    giant = ("arn:" if field == "schedule_arn" else "") + "x" * 450_000

    error = _malformed(_event(**{field: giant}))

    assert error.field == field
    assert len(str(error)) < MESSAGE_LIMIT


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("scheduled_time", "9" * 4000),
        ("scheduled_time", {"nested": ["x" * 4000]}),
        ("trigger", "y" * 4000),
        ("attempt", "7" * 4000),
        ("job", ["z" * 4000]),
    ],
)
def test_a_long_bad_value_is_quoted_by_a_short_prefix_only(field: str, value: Any) -> None:
    error = _malformed(_event(**{field: value}))

    assert error.field == field
    assert len(str(error)) < MESSAGE_LIMIT


def test_a_tick_off_its_minute_is_malformed() -> None:
    error = _malformed(_event(scheduled_time="2026-11-29T09:00:30Z"))

    assert error.field == "scheduled_time"
    assert "whole minute" in str(error)


def test_the_triggers_whole_minute_check_runs_after_conversion_to_utc() -> None:
    # 09:00:00+00:00:30 is 08:59:30 UTC: its written seconds are 00, its instant is off the minute.
    body = json.dumps({"scheduled_time": "2026-11-29T09:10:00+00:00:30"})

    with pytest.raises(BadTickRequest) as raised:
        tick_body(body, now=NOW, window=WINDOW)

    assert raised.value.field == "scheduled_time"
    assert "whole minute" in str(raised.value)


def test_a_400_body_echoes_a_short_prefix_of_what_was_sent() -> None:
    body = json.dumps({"scheduled_time": "2026-11-29T09:10:00Z" + "9" * 4000})

    with pytest.raises(BadTickRequest) as raised:
        tick_body(body, now=NOW, window=WINDOW)

    assert raised.value.field == "scheduled_time"
    assert len(json.dumps(raised.value.body())) < MESSAGE_LIMIT
