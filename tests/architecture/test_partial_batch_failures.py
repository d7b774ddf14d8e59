"""Rule `partial-batch-failures`: planted event source mappings that lose or repeat messages, or run
unbounded, each caught."""

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


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("partial-batch-failures") == []


@pytest.mark.parametrize(
    "response_types",
    ["      FunctionResponseTypes: []\n", ""],
    ids=["empty", "left-out"],
)
def test_a_mapping_that_ignores_batch_item_failures_is_caught(planted: PlantedCopy, response_types: str) -> None:
    planted.replace(
        TEMPLATE, "      FunctionResponseTypes: [ReportBatchItemFailures]\n", response_types, after=HOURLY_MAPPING
    )

    found(
        planted.violations("partial-batch-failures"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerEventSourceMapping",
        containing="Lambda ignores the worker's batchItemFailures",
    )


@pytest.mark.parametrize(
    ("batch_size", "stated"),
    [("      BatchSize: 100\n", "100"), ("      BatchSize: !Ref AWS::NoValue\n", "{'Ref'"), ("", "None")],
    ids=["too-big", "not-literal", "left-out-defaults-to-10-unstated"],
)
def test_an_unbounded_or_unstated_batch_size_is_caught(planted: PlantedCopy, batch_size: str, stated: str) -> None:
    planted.replace(TEMPLATE, "      BatchSize: 1\n", batch_size, after=NIGHTLY_MAPPING)

    violation = found(
        planted.violations("partial-batch-failures"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerEventSourceMapping",
        containing="BatchSize is",
    )
    assert stated in violation.message


def test_a_batching_window_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      BatchSize: 1\n",
        "      BatchSize: 1\n      MaximumBatchingWindowInSeconds: 20\n",
        after=NIGHTLY_MAPPING,
    )

    found(
        planted.violations("partial-batch-failures"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerEventSourceMapping",
        containing="MaximumBatchingWindowInSeconds is 20",
    )


@pytest.mark.parametrize(
    "scaling",
    ["", "      ScalingConfig:\n        MaximumConcurrency: 1\n"],
    ids=["left-out", "below-lambda-minimum"],
)
def test_an_unbounded_or_impossible_concurrency_is_caught(planted: PlantedCopy, scaling: str) -> None:
    planted.replace(
        TEMPLATE,
        f"      ScalingConfig:\n        MaximumConcurrency: {HOURLY_JOB.shards}\n",
        scaling,
        after=HOURLY_MAPPING,
    )

    found(
        planted.violations("partial-batch-failures"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerEventSourceMapping",
        containing="ScalingConfig.MaximumConcurrency is",
    )


def test_a_disabled_mapping_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "      BatchSize: 1\n", "      BatchSize: 1\n      Enabled: false\n", after=HOURLY_MAPPING
    )

    found(
        planted.violations("partial-batch-failures"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerEventSourceMapping",
        containing="no tick finishes",
    )


def test_a_reservation_under_the_mappings_concurrency_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      Timeout: 300\n",
        "      Timeout: 300\n      ReservedConcurrentExecutions: 4\n",
        after=f"  {DAILY_JOB.stem}WorkerFunction:\n",
    )

    violation = found(
        planted.violations("partial-batch-failures"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerEventSourceMapping",
        containing=f"reserves 4 concurrent executions, under the mapping's MaximumConcurrency {DAILY_JOB.shards}",
    )
    assert (
        violation.fix == f"ReservedConcurrentExecutions of at least {DAILY_JOB.shards}, or MaximumConcurrency at most 4"
    )
