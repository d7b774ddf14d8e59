"""Rule duration-bound, proven by planted violations."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("duration-bound") == []


def test_planted_expected_duration_at_the_timeout_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "expected_duration_seconds: 60",
        "expected_duration_seconds: 120",
        resource=f"{DAILY_JOB.stem}Function",
    )

    violations = planted.violations("duration-bound")
    function_id = f"{DAILY_JOB.stem}Function"
    violation = found(violations, file=TEMPLATE, resource=function_id, containing="not below the Timeout")

    assert "120" in violation.message
    # One fix, the bound's (a declared job's loop writes the alarm's Threshold from the same key): no
    # second hint about an alarm judged against a bound the Timeout already breaks
    assert [v.resource for v in violations] == [f"{DAILY_JOB.stem}Function"]


def test_planted_duration_alarm_above_the_bound_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, '      Threshold: "30000"', "      Threshold: 110000", resource=f"{HOURLY_JOB.stem}DurationAlarm"
    )

    violation = found(planted.violations("duration-bound"), file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function")

    assert "p99 > 110000" in violation.message


def test_planted_duration_alarm_on_the_average_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      ExtendedStatistic: p99\n",
        "      Statistic: Average\n",
        after=f"  {DAILY_JOB.stem}DurationAlarm:",
    )

    found(planted.violations("duration-bound"), file=TEMPLATE, resource=f"{DAILY_JOB.stem}Function", containing="p90")


def test_planted_function_without_an_expected_duration_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "        expected_duration_seconds: 30\n", "", resource=f"{HOURLY_JOB.stem}Function")

    found(
        planted.violations("duration-bound"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}Function",
        containing="expected_duration_seconds is not declared",
    )


def test_planted_worker_expected_to_run_to_its_timeout_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "expected_duration_seconds: 285",
        "expected_duration_seconds: 300",
        after=f"  {HOURLY_JOB.stem}WorkerFunction:",
    )

    found(
        planted.violations("duration-bound"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="not below the Timeout 300 s",
    )


def test_planted_worker_without_a_duration_alarm_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"Value: !Ref {DAILY_JOB.stem}WorkerFunction\n      ExtendedStatistic: p99",
        f"Value: !Ref {DAILY_JOB.stem}Function\n      ExtendedStatistic: p99",
        resource=f"{DAILY_JOB.stem}WorkerDurationAlarm",
    )

    violation = found(
        planted.violations("duration-bound"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerFunction",
        containing="p90",
    )
    assert "found: none" in violation.message
