"""Rule `schedule-delivery`: planted schedules without UTC, bounded retries or dead letters, each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"


HOURLY = f"{HOURLY_JOB.stem}Function.Events.Schedule"


# ---------------------------------------------------------------------------------------------- schedule-delivery
@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        (
            "ScheduleExpressionTimezone: UTC",
            "ScheduleExpressionTimezone: America/New_York",
            "ScheduleExpressionTimezone is 'America/New_York'",
        ),
        ("            ScheduleExpressionTimezone: UTC\n", "", "ScheduleExpressionTimezone is not stated"),
        ('            FlexibleTimeWindow:\n              Mode: "OFF"\n', "", "FlexibleTimeWindow is not stated"),
        ("DeadLetterConfig:\n              Arn:", "Tags:\n              Arn:", "no DeadLetterConfig"),
        (
            "            RetryPolicy:\n"
            "              MaximumRetryAttempts: 5\n"
            "              MaximumEventAgeInSeconds: 900\n",
            "",
            "no RetryPolicy",
        ),
        (
            "MaximumEventAgeInSeconds: 900\n",
            "MaximumEventAgeInSeconds: 3600\n",
            "3600 s is not shorter than the schedule's period 3600 s",
        ),
        ("              MaximumEventAgeInSeconds: 900\n", "", "no literal MaximumEventAgeInSeconds"),
        ("ScheduleExpression: cron(0 * * * ? *)", "ScheduleExpression: cron(0 * * *)", "cannot be evaluated"),
        ("MaximumRetryAttempts: 5\n", "MaximumRetryAttempts: 186\n", "outside Scheduler's range 0-185"),
        ("MaximumEventAgeInSeconds: 900\n", "MaximumEventAgeInSeconds: 59\n", "under Scheduler's minimum 60 s"),
    ],
    ids=[
        "local-zone",
        "no-zone",
        "no-window",
        "no-dlq",
        "no-retry-policy",
        "age-not-below-period",
        "no-age",
        "bad-cron",
        "retries-past-185",
        "age-under-60",
    ],
)
def test_a_schedule_without_utc_bounded_retries_or_dead_letters_is_caught(
    planted: PlantedCopy, old: str, new: str, complaint: str
) -> None:
    # Given the hourly cleanup schedule with one delivery setting broken
    planted.replace(TEMPLATE, old, new, after=CLEANUP)

    # When schedule-delivery checks the copy
    violations = planted.violations("schedule-delivery")

    # Then it names that schedule in the template
    found(violations, file=TEMPLATE, resource=HOURLY, containing=complaint)


def test_a_rate_schedule_whose_retries_outlast_its_period_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "ScheduleExpression: cron(0 * * * ? *)", "ScheduleExpression: rate(10 minutes)", after=CLEANUP
    )

    violations = planted.violations("schedule-delivery")

    found(violations, file=TEMPLATE, resource=HOURLY, containing="period 600 s")


def test_an_eventbridge_rule_schedule_is_caught_because_it_cannot_state_utc(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "Type: ScheduleV2", "Type: Schedule", after=CLEANUP)

    violations = planted.violations("schedule-delivery")

    found(violations, file=TEMPLATE, resource=HOURLY, containing="Type: Schedule is an EventBridge rule")
