"""Rule `visibility-covers-timeout`: planted work queues whose messages reappear while a worker may
still run them, each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
NIGHTLY_QUEUE = f"  {DAILY_JOB.stem}WorkQueue:\n"
HOURLY_WORKER = f"  {HOURLY_JOB.stem}WorkerFunction:\n"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("visibility-covers-timeout") == []


@pytest.mark.parametrize(
    ("visibility", "stated"),
    [("      VisibilityTimeout: 1799\n", "1799"), ("", "the default 30")],
    ids=["just-under-6x", "sqs-default"],
)
def test_a_visibility_timeout_under_six_timeouts_is_caught(planted: PlantedCopy, visibility: str, stated: str) -> None:
    planted.replace(TEMPLATE, "      VisibilityTimeout: 1800\n", visibility, after=NIGHTLY_QUEUE)

    violation = found(
        planted.violations("visibility-covers-timeout"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkQueue",
        containing=f"6 x {DAILY_JOB.stem}WorkerFunction's Timeout 300 s = 1800 s",
    )
    assert stated in violation.message


def test_a_worker_timeout_raised_past_the_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "      Timeout: 300\n", "      Timeout: 600\n", after=HOURLY_WORKER)

    found(
        planted.violations("visibility-covers-timeout"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkQueue",
        containing="Timeout 600 s = 3600 s",
    )
