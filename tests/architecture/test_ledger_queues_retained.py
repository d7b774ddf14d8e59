"""Planted violations of ledger-queues-retained, each caught: the ledger table and every queue a
tick can land in survive deleting or replacing the stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
RULE = "ledger-queues-retained"


@pytest.mark.parametrize("resource", ["LedgerTable", "SchedulerDeadLetterQueue", "JobFailureQueue"])
@pytest.mark.parametrize(
    ("policy", "planted"),
    [("DeletionPolicy", "Delete"), ("UpdateReplacePolicy", "Snapshot"), ("DeletionPolicy", None)],
    ids=["deleted", "snapshot-on-replace", "not-stated"],
)
def test_a_ledger_or_queue_that_the_stack_may_delete_is_caught(
    tmp_path: Path, resource: str, policy: str, planted: str | None
) -> None:
    # Given one of the three with one policy no longer Retain
    copy = PlantedCopy.of_project(tmp_path)
    new = "" if planted is None else f"    {policy}: {planted}\n"
    copy.replace(TEMPLATE, f"    {policy}: Retain\n", new, after=f"  {resource}:\n")

    # When the rule checks the copy
    violations = copy.violations(RULE)

    # Then it names that resource and that policy, and only them
    stated = "is not stated" if planted is None else f"is {planted!r}"
    violation = found(violations, file=TEMPLATE, resource=resource, containing=f"{policy} {stated}")
    assert violation.fix == f"{policy}: Retain on {resource}"
    assert len(violations) == 1


def test_a_new_failure_queue_without_retain_is_caught(tmp_path: Path) -> None:
    # Given window generation's failures sent to a queue of its own, declared without policies
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(
        TEMPLATE,
        "Destination: !GetAtt JobFailureQueue.Arn",
        "Destination: !GetAtt NightlyFailureQueue.Arn",
        after="  WindowGenerationFunction:\n",
    )
    copy.replace(
        TEMPLATE,
        "  # ---------------------------------------------------------------- jobs\n",
        "  NightlyFailureQueue:\n    Type: AWS::SQS::Queue\n\n"
        "  # ---------------------------------------------------------------- jobs\n",
    )

    violations = copy.violations(RULE)

    found(violations, file=TEMPLATE, resource="NightlyFailureQueue", containing="every tick WindowGenerationFunction")


def test_a_dead_letter_queue_sam_creates_is_caught(tmp_path: Path) -> None:
    # Given the hourly schedule's dead letters in a queue SAM generates (no policy can be set on it)
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(
        TEMPLATE,
        "DeadLetterConfig:\n              Arn: !GetAtt SchedulerDeadLetterQueue.Arn",
        "DeadLetterConfig:\n              Type: SQS",
        after="  SessionCleanupFunction:\n",
    )

    violations = copy.violations(RULE)

    found(
        violations,
        file=TEMPLATE,
        resource="SessionCleanupFunction.Events.Hourly",
        containing="lets SAM create the queue",
    )
