"""Planted violations of ledger-queues-retained, each caught: the ledger table and every queue a
tick can land in survive deleting or replacing the stack."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
RULE = "ledger-queues-retained"


@pytest.mark.parametrize(
    "resource",
    [
        "LedgerTable",
        "SchedulerDeadLetterQueue",
        "JobFailureQueue",
        # The partitions of running ticks, and the partitions and items set aside.
        f"{DAILY_JOB.stem}WorkQueue",
        f"{HOURLY_JOB.stem}WorkDeadLetterQueue",
    ],
)
@pytest.mark.parametrize(
    ("policy", "value"),
    [("DeletionPolicy", "Delete"), ("UpdateReplacePolicy", "Snapshot"), ("DeletionPolicy", None)],
    ids=["deleted", "snapshot-on-replace", "not-stated"],
)
def test_a_ledger_or_queue_that_the_stack_may_delete_is_caught(
    planted: PlantedCopy, resource: str, policy: str, value: str | None
) -> None:
    # Given one of them with one policy no longer Retain
    new = "" if value is None else f"    {policy}: {value}\n"
    planted.replace(TEMPLATE, f"    {policy}: Retain\n", new, after=f"  {resource}:\n")

    # When the rule checks the copy
    violations = planted.violations(RULE)

    # Then it names that resource and that policy, and only them
    stated = "is not stated" if value is None else f"is {value!r}"
    violation = found(violations, file=TEMPLATE, resource=resource, containing=f"{policy} {stated}")
    assert violation.fix == f"{policy}: Retain on {resource}"
    assert len(violations) == 1


def test_a_new_failure_queue_without_retain_is_caught(planted: PlantedCopy) -> None:
    # Given window generation's failures sent to a queue of its own, declared without policies
    planted.replace(
        TEMPLATE,
        "Destination: !GetAtt JobFailureQueue.Arn",
        "Destination: !GetAtt NightlyFailureQueue.Arn",
        after=f"  {DAILY_JOB.stem}Function:\n",
    )
    planted.replace(
        TEMPLATE,
        f"  {DAILY_JOB.stem}Function:\n",
        f"  NightlyFailureQueue:\n    Type: AWS::SQS::Queue\n\n  {DAILY_JOB.stem}Function:\n",
    )

    violations = planted.violations(RULE)

    found(violations, file=TEMPLATE, resource="NightlyFailureQueue", containing=f"every tick {DAILY_JOB.stem}Function")


def test_a_dead_letter_queue_sam_creates_is_caught(planted: PlantedCopy) -> None:
    # Given the hourly schedule's dead letters in a queue SAM generates (no policy can be set on it)
    planted.replace(
        TEMPLATE,
        "DeadLetterConfig:\n              Arn: !GetAtt SchedulerDeadLetterQueue.Arn",
        "DeadLetterConfig:\n              Type: SQS",
        after=f"  {HOURLY_JOB.stem}Function:\n",
    )

    violations = planted.violations(RULE)

    found(
        violations,
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}Function.Events.Schedule",
        containing="lets SAM create the queue",
    )
