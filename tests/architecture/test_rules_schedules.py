"""Planted violations of schedule-delivery and dedupe-outlives-retries, each caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
CLEANUP = "  SessionCleanupFunction:\n"
HOURLY = "SessionCleanupFunction.Events.Hourly"


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
    ],
)
def test_a_schedule_without_utc_bounded_retries_or_dead_letters_is_caught(
    tmp_path: Path, old: str, new: str, complaint: str
) -> None:
    # Given the hourly cleanup schedule with one delivery setting broken
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, old, new, after=CLEANUP)

    # When schedule-delivery checks the copy
    violations = copy.violations("schedule-delivery")

    # Then it names that schedule in the template
    found(violations, file=TEMPLATE, resource=HOURLY, containing=complaint)


def test_a_rate_schedule_whose_retries_outlast_its_period_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(
        TEMPLATE, "ScheduleExpression: cron(0 * * * ? *)", "ScheduleExpression: rate(10 minutes)", after=CLEANUP
    )

    violations = copy.violations("schedule-delivery")

    found(violations, file=TEMPLATE, resource=HOURLY, containing="period 600 s")


def test_an_eventbridge_rule_schedule_is_caught_because_it_cannot_state_utc(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, "Type: ScheduleV2", "Type: Schedule", after=CLEANUP)

    violations = copy.violations("schedule-delivery")

    found(violations, file=TEMPLATE, resource=HOURLY, containing="Type: Schedule is an EventBridge rule")


# ---------------------------------------------------------------------------------------------- dedupe-outlives-retries
def test_an_idempotency_record_that_expires_inside_the_retry_window_is_caught(tmp_path: Path) -> None:
    # Given cleanup's record kept 30 minutes while its retries span 900 s + 1800 s
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, 'IDEMPOTENCY_EXPIRY_SECONDS: "86400"', 'IDEMPOTENCY_EXPIRY_SECONDS: "1800"', after=CLEANUP)

    violations = copy.violations("dedupe-outlives-retries")

    violation = found(violations, file=TEMPLATE, resource="SessionCleanupFunction", containing="1800 s is shorter")
    assert "retry window 2700 s (scheduler 900 s + Lambda async 1800 s)" in violation.message


def test_lambdas_default_six_hour_async_age_counts_when_unset(tmp_path: Path) -> None:
    # Given no MaximumEventAgeInSeconds on the function's EventInvokeConfig
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, "        MaximumEventAgeInSeconds: 1800\n", "", after=CLEANUP)
    copy.replace(TEMPLATE, 'IDEMPOTENCY_EXPIRY_SECONDS: "86400"', 'IDEMPOTENCY_EXPIRY_SECONDS: "7200"', after=CLEANUP)

    violations = copy.violations("dedupe-outlives-retries")

    found(violations, file=TEMPLATE, resource="SessionCleanupFunction", containing="Lambda async 21600 s")


def test_a_scheduled_function_without_an_expiry_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, '          IDEMPOTENCY_EXPIRY_SECONDS: "86400"\n', "", after=CLEANUP)

    violations = copy.violations("dedupe-outlives-retries")

    found(violations, file=TEMPLATE, resource="SessionCleanupFunction", containing="is not set")
