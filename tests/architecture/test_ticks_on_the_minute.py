"""Planted violations of ticks-on-the-minute, each caught: a schedule whose scheduled times carry
seconds would have every tick refused by the kit."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
RULE = "ticks-on-the-minute"
CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"
HOURLY = f"{HOURLY_JOB.stem}Function.Events.Schedule"
CRON = "ScheduleExpression: cron(0 * * * ? *)"


def _plant(planted: PlantedCopy, schedule: str) -> PlantedCopy:
    planted.replace(TEMPLATE, CRON, schedule, after=CLEANUP)
    return planted


@pytest.mark.parametrize(
    ("schedule", "complaint"),
    [
        ("ScheduleExpression: rate(1 hour)", "rate(1 hour) has no StartDate"),
        (
            "ScheduleExpression: rate(1 hour)\n            StartDate: '2026-01-01T00:00:30Z'",
            "StartDate '2026-01-01T00:00:30Z' is not a literal time on a whole minute",
        ),
        (
            "ScheduleExpression: rate(1 hour)\n            StartDate: !Ref AlarmEmail",
            "is not a literal time on a whole minute",
        ),
        ("ScheduleExpression: at(2026-12-24T10:00:30)", "at(2026-12-24T10:00:30) is not on a whole minute"),
    ],
    ids=["rate-from-creation", "rate-start-off-minute", "rate-start-not-literal", "at-off-minute"],
)
def test_a_schedule_that_ticks_off_the_minute_is_caught(planted: PlantedCopy, schedule: str, complaint: str) -> None:
    # Given the hourly cleanup schedule rewritten so its ticks may carry seconds
    _plant(planted, schedule)

    # When the rule checks the copy
    violations = planted.violations(RULE)

    # Then it names that schedule
    found(violations, file=TEMPLATE, resource=HOURLY, containing=complaint)


@pytest.mark.parametrize(
    "schedule",
    [
        "ScheduleExpression: rate(1 hour)\n            StartDate: '2026-01-01T00:00:00Z'",
        "ScheduleExpression: at(2026-12-24T10:00:00)",
    ],
    ids=["rate-from-a-whole-minute", "at-a-whole-minute"],
)
def test_a_schedule_on_whole_minutes_holds(planted: PlantedCopy, schedule: str) -> None:
    assert _plant(planted, schedule).violations(RULE) == []
