from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from clockless import MalformedTickError, Tick, Trigger
from tests.conftest import load_event
from tests.jobs import DAY, HOUR, job_where

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)


def test_scheduler_payload_parses_into_a_tick() -> None:
    tick = Tick.from_event(load_event(f"{DAILY_JOB.package}/tick.json"), expected_job=DAILY_JOB.name)

    assert tick.scheduled_time == datetime(2026, 11, 28, 14, 0, tzinfo=UTC)
    assert tick.attempt == 1
    assert tick.trigger is Trigger.SCHEDULE
    assert tick.identity == {"job": DAILY_JOB.name, "scheduled_time": "2026-11-28T14:00:00Z"}


def test_retry_is_the_same_tick_with_a_new_attempt() -> None:
    first = Tick.from_event(load_event(f"{DAILY_JOB.package}/tick.json"), expected_job=DAILY_JOB.name)
    retry = Tick.from_event(load_event(f"{DAILY_JOB.package}/retry.json"), expected_job=DAILY_JOB.name)

    assert retry.attempt == 2
    assert retry.execution_id != first.execution_id
    assert retry.identity == first.identity


def test_an_offset_time_is_the_same_instant_as_its_utc_spelling() -> None:
    event = load_event(f"{HOURLY_JOB.package}/tick.json") | {"scheduled_time": "2026-11-29T04:00:00-05:00"}

    tick = Tick.from_event(event, expected_job=HOURLY_JOB.name)

    assert tick.identity["scheduled_time"] == "2026-11-29T09:00:00Z"


def test_round_trip_through_the_payload() -> None:
    tick = Tick.from_event(load_event(f"{HOURLY_JOB.package}/retry.json"), expected_job=HOURLY_JOB.name)

    assert Tick.from_event(tick.to_event(), expected_job=HOURLY_JOB.name) == tick


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"scheduled_time": None}, "scheduled_time", "non-empty string"),
        ({"scheduled_time": "yesterday"}, "scheduled_time", "not an ISO-8601"),
        ({"scheduled_time": "2026-11-29T09:00:00"}, "scheduled_time", "no time zone"),
        ({"scheduled_time": "<aws.scheduler.scheduled-time>"}, "scheduled_time", "unsubstituted"),
        ({"job": HOURLY_JOB.name}, "job", f"this function runs '{DAILY_JOB.name}'"),
        ({"attempt": "zero"}, "attempt", "integer from 1 to"),
        ({"attempt": "0"}, "attempt", "integer from 1 to"),
        ({"attempt": True}, "attempt", "integer from 1 to"),
        ({"attempt": "1e3"}, "attempt", "integer from 1 to"),
        ({"attempt": -1}, "attempt", "integer from 1 to"),
        ({"attempt": None}, "attempt", "integer from 1 to"),
        ({"attempt": [1]}, "attempt", "got an array"),
        ({"trigger": "cron"}, "trigger", "must be one of"),
        ({"execution_id": ""}, "execution_id", "non-empty"),
    ],
)
def test_malformed_payload_names_the_field(change: dict[str, Any], field: str, problem: str) -> None:
    event = load_event(f"{DAILY_JOB.package}/tick.json") | change

    with pytest.raises(MalformedTickError) as raised:
        Tick.from_event(event, expected_job=DAILY_JOB.name)

    assert raised.value.field == field
    assert problem in str(raised.value)


def test_missing_fields_are_named() -> None:
    with pytest.raises(MalformedTickError, match="'scheduled_time' is missing"):
        Tick.from_event(load_event(f"{HOURLY_JOB.package}/malformed.json"), expected_job=HOURLY_JOB.name)
    with pytest.raises(MalformedTickError, match="'job' is missing"):
        Tick.from_event({"scheduled_time": "2026-11-29T09:00:00Z"}, expected_job=HOURLY_JOB.name)


@pytest.mark.parametrize("event", [[], "tick", None, 42])
def test_a_payload_that_is_not_an_object_is_rejected(event: Any) -> None:
    with pytest.raises(MalformedTickError, match="JSON object"):
        Tick.from_event(event, expected_job=HOURLY_JOB.name)


def test_the_scheduler_default_envelope_is_rejected_because_it_names_no_job() -> None:
    envelope = {
        "version": "0",
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "time": "2026-11-29T09:00:00Z",
        "resources": ["arn:aws:scheduler:us-east-1:123456789012:schedule/default/x"],
        "detail": "{}",
    }
    with pytest.raises(MalformedTickError, match="'job' is missing"):
        Tick.from_event(envelope, expected_job=HOURLY_JOB.name)


VALID = Tick(HOURLY_JOB.name, datetime(2026, 11, 29, 9, 0, tzinfo=UTC), None, 1, None, Trigger.MANUAL)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"job": ""}, "job"),
        ({"job": "j" * 257}, "job"),
        ({"scheduled_time": datetime(2026, 11, 29, 9, 0)}, "scheduled_time"),  # noqa: DTZ001 - the point
        ({"scheduled_time": datetime(2026, 11, 29, 9, 0, 30, tzinfo=UTC)}, "scheduled_time"),
        ({"scheduled_time": datetime(999, 12, 31, 23, 0, tzinfo=UTC)}, "scheduled_time"),
        ({"schedule_arn": "schedule/default/x"}, "schedule_arn"),
        ({"attempt": 0}, "attempt"),
        ({"attempt": 1001}, "attempt"),
        ({"attempt": True}, "attempt"),
        ({"execution_id": "e" * 257}, "execution_id"),
        ({"trigger": "schedule"}, "trigger"),
    ],
)
def test_a_tick_built_in_code_is_held_to_the_same_bounds(change: dict[str, Any], field: str) -> None:
    # Given the fields of a valid tick with one out of bounds, as backfill or the trigger might build it
    fields = {name: getattr(VALID, name) for name in Tick.__slots__} | change

    # Then it cannot be built, and the error names the field
    with pytest.raises(MalformedTickError) as raised:
        Tick(**fields)
    assert raised.value.field == field


def test_a_tick_built_in_code_at_its_bounds_is_valid() -> None:
    assert Tick("j" * 256, datetime(1000, 1, 1, tzinfo=UTC), "arn:" + "a" * 252, 1000, "e" * 256, Trigger.HTTP)
