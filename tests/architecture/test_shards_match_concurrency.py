"""Rule `shards-match-concurrency`: planted workers whose MaximumConcurrency and partition count
disagree, and partitions the syntax cannot count, each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
NIGHTLY_MAPPING = f"  {DAILY_JOB.stem}WorkerEventSourceMapping:\n"
HOURLY_MAPPING = f"  {HOURLY_JOB.stem}WorkerEventSourceMapping:\n"
NIGHTLY_REPOSITORY = f"functions/{DAILY_JOB.package}/{DAILY_JOB.package}/repository.py"
HOURLY_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("shards-match-concurrency") == []


@pytest.mark.parametrize(
    ("concurrency", "stated", "effect"),
    [
        ("        MaximumConcurrency: 8\n", "is 8", "shards wait for a worker"),
        ("        MaximumConcurrency: 32\n", "is 32", "workers beyond the partitions have nothing to do"),
    ],
    ids=["fewer-workers-than-shards", "more-workers-than-shards"],
)
def test_a_maximum_concurrency_other_than_the_shard_count_is_caught(
    planted: PlantedCopy, concurrency: str, stated: str, effect: str
) -> None:
    planted.replace(TEMPLATE, "        MaximumConcurrency: 16\n", concurrency, after=NIGHTLY_MAPPING)

    violation = found(
        planted.violations("shards-match-concurrency"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerEventSourceMapping",
        containing=f"{DAILY_JOB.stem}WorkerFunction's FanOut has 16 partitions",
    )
    assert stated in violation.message
    assert effect in violation.message


def test_a_worker_without_maximum_concurrency_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "      ScalingConfig:\n        MaximumConcurrency: 16\n", "", after=HOURLY_MAPPING)

    found(
        planted.violations("shards-match-concurrency"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerEventSourceMapping",
        containing="not set (the poller scales up to 1,000)",
    )


def test_a_shard_count_changed_in_code_alone_is_caught(planted: PlantedCopy) -> None:
    planted.replace(NIGHTLY_REPOSITORY, "DUE_INDEX_SHARDS: Final = 16\n", "DUE_INDEX_SHARDS: Final = 24\n")

    found(
        planted.violations("shards-match-concurrency"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerEventSourceMapping",
        containing="has 24 partitions",
    )


def test_partitions_the_syntax_cannot_count_are_caught(planted: PlantedCopy) -> None:
    planted.replace(HOURLY_HANDLER, "partitions=EMPTY_INDEX_PARTITIONS", "partitions=sorted(EMPTY_INDEX_PARTITIONS)")

    found(
        planted.violations("shards-match-concurrency"),
        file=HOURLY_HANDLER,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="cannot be matched to the worker's MaximumConcurrency",
    )
