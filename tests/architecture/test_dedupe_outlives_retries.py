"""Rule `dedupe-outlives-retries`: planted idempotency lifetimes shorter than the retry window, each caught."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"


# ---------------------------------------------------------------------------------------------- dedupe-outlives-retries
def test_an_idempotency_record_that_expires_inside_the_retry_window_is_caught(planted: PlantedCopy) -> None:
    # Given cleanup's record kept 30 minutes while its retries span 900 s + 1800 s
    planted.replace(
        TEMPLATE, 'IDEMPOTENCY_EXPIRY_SECONDS: "86400"', 'IDEMPOTENCY_EXPIRY_SECONDS: "1800"', after=CLEANUP
    )

    violations = planted.violations("dedupe-outlives-retries")

    violation = found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="1800 s is shorter")
    assert (
        "retry window 2759 s (precision 59 s + flexible window 0 s + scheduler 900 s + Lambda async 1800 s)"
        in violation.message
    )


def test_lambdas_default_six_hour_async_age_counts_when_unset(planted: PlantedCopy) -> None:
    # Given no MaximumEventAgeInSeconds on the function's EventInvokeConfig
    planted.replace(TEMPLATE, "        MaximumEventAgeInSeconds: 1800\n", "", after=CLEANUP)
    planted.replace(
        TEMPLATE, 'IDEMPOTENCY_EXPIRY_SECONDS: "86400"', 'IDEMPOTENCY_EXPIRY_SECONDS: "7200"', after=CLEANUP
    )

    violations = planted.violations("dedupe-outlives-retries")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="Lambda async 21600 s")


def test_a_scheduled_function_without_an_expiry_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, '          IDEMPOTENCY_EXPIRY_SECONDS: "86400"\n', "", after=CLEANUP)

    violations = planted.violations("dedupe-outlives-retries")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="is not set")


def test_a_flexible_window_counts_in_the_retry_window(planted: PlantedCopy) -> None:
    # Given cleanup may fire up to 60 minutes late, and its record is kept exactly the old window
    planted.replace(
        TEMPLATE,
        'FlexibleTimeWindow:\n              Mode: "OFF"',
        "FlexibleTimeWindow:\n              Mode: FLEXIBLE\n              MaximumWindowInMinutes: 60",
        after=CLEANUP,
    )
    planted.replace(
        TEMPLATE, 'IDEMPOTENCY_EXPIRY_SECONDS: "86400"', 'IDEMPOTENCY_EXPIRY_SECONDS: "2759"', after=CLEANUP
    )

    violations = planted.violations("dedupe-outlives-retries")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="flexible window 3600 s")
