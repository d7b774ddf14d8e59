"""Rule `shards-match-concurrency`: planted workers whose MaximumConcurrency and partition count
disagree, and partitions the syntax cannot count, each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, Job, job_where, project_template

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
NIGHTLY_MAPPING = f"  {DAILY_JOB.stem}WorkerEventSourceMapping:\n"
HOURLY_MAPPING = f"  {HOURLY_JOB.stem}WorkerEventSourceMapping:\n"
NIGHTLY_REPOSITORY = f"functions/{DAILY_JOB.package}/{DAILY_JOB.package}/repository.py"
HOURLY_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


def _shards(job: Job) -> int:
    """The job's workers' MaximumConcurrency as the template writes it (its declaration's Shards)."""
    assert job.worker_id is not None
    (concurrency,) = {m.maximum_concurrency for m in project_template().mappings_of(job.worker_id)}
    assert concurrency is not None
    return concurrency


DAILY_SHARDS = _shards(DAILY_JOB)
HOURLY_SHARDS = _shards(HOURLY_JOB)


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("shards-match-concurrency") == []


@pytest.mark.parametrize(
    ("concurrency", "stated", "effect"),
    [
        (f"        MaximumConcurrency: {DAILY_SHARDS // 2}\n", f"is {DAILY_SHARDS // 2}", "shards wait for a worker"),
        (
            f"        MaximumConcurrency: {DAILY_SHARDS * 2}\n",
            f"is {DAILY_SHARDS * 2}",
            "workers beyond the partitions have nothing to do",
        ),
    ],
    ids=["fewer-workers-than-shards", "more-workers-than-shards"],
)
def test_a_maximum_concurrency_other_than_the_shard_count_is_caught(
    planted: PlantedCopy, concurrency: str, stated: str, effect: str
) -> None:
    planted.replace(TEMPLATE, f"        MaximumConcurrency: {DAILY_SHARDS}\n", concurrency, after=NIGHTLY_MAPPING)

    violation = found(
        planted.violations("shards-match-concurrency"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerEventSourceMapping",
        containing=f"{DAILY_JOB.stem}WorkerFunction's FanOut has {DAILY_SHARDS} partitions",
    )
    assert stated in violation.message
    assert effect in violation.message


def test_a_worker_without_maximum_concurrency_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, f"      ScalingConfig:\n        MaximumConcurrency: {HOURLY_SHARDS}\n", "", after=HOURLY_MAPPING
    )

    found(
        planted.violations("shards-match-concurrency"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerEventSourceMapping",
        containing="not set (the poller scales up to 1,000)",
    )


def test_a_shard_count_changed_in_code_alone_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        NIGHTLY_REPOSITORY,
        f"DUE_INDEX_SHARDS: Final = {DAILY_SHARDS}\n",
        f"DUE_INDEX_SHARDS: Final = {DAILY_SHARDS + 8}\n",
    )

    found(
        planted.violations("shards-match-concurrency"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerEventSourceMapping",
        containing=f"has {DAILY_SHARDS + 8} partitions",
    )


def test_partitions_the_syntax_cannot_count_are_caught(planted: PlantedCopy) -> None:
    planted.replace(HOURLY_HANDLER, "partitions=EMPTY_INDEX_PARTITIONS", "partitions=sorted(EMPTY_INDEX_PARTITIONS)")

    found(
        planted.violations("shards-match-concurrency"),
        file=HOURLY_HANDLER,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="cannot be matched to the worker's MaximumConcurrency",
    )
