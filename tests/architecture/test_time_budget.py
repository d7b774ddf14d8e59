"""Rule `time-budget`: planted workers that cannot hand on before their Timeout, or whose Duration
alarm would fire at every hand-off, each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
NIGHTLY_WORKER = f"  {DAILY_JOB.stem}WorkerFunction:\n"
HOURLY_WORKER = f"  {HOURLY_JOB.stem}WorkerFunction:\n"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("time-budget") == []


@pytest.mark.parametrize(
    ("budget", "stated"),
    [
        ('          WORK_TIME_BUDGET_SECONDS: "300"\n', "'300'"),
        ('          WORK_TIME_BUDGET_SECONDS: "0"\n', "'0'"),
        ('          WORK_TIME_BUDGET_SECONDS: "thirty"\n', "'thirty'"),
        ("", "None"),
    ],
    ids=["at-the-timeout", "nothing-left-to-hand-on", "not-a-number", "left-out"],
)
def test_a_budget_that_leaves_no_time_to_work_or_to_hand_on_is_caught(
    planted: PlantedCopy, budget: str, stated: str
) -> None:
    planted.replace(TEMPLATE, '          WORK_TIME_BUDGET_SECONDS: "30"\n', budget, after=HOURLY_WORKER)

    violation = found(
        planted.violations("time-budget"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="WORK_TIME_BUDGET_SECONDS is",
    )
    assert f"is {stated} with a Timeout of 300 s" in violation.message


def test_an_expected_duration_below_the_hand_off_is_caught(planted: PlantedCopy) -> None:
    # Given a worker expected to run 200 s, though a long partition normally runs 300 - 30 = 270 s
    planted.replace(TEMPLATE, "expected_duration_seconds: 285", "expected_duration_seconds: 200", after=NIGHTLY_WORKER)

    violation = found(
        planted.violations("time-budget"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerFunction",
        containing="fires on every hand-off",
    )
    assert "runs until 270 s" in violation.message
