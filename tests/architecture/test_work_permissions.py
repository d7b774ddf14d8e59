"""Rule `work-permissions`: planted policies too narrow for what the kit calls, each caught (moto
enforces no IAM, so no local run would)."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
NIGHTLY = f"  {DAILY_JOB.stem}Function:\n"
NIGHTLY_WORKER = f"  {DAILY_JOB.stem}WorkerFunction:\n"
HOURLY_WORKER = f"  {HOURLY_JOB.stem}WorkerFunction:\n"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("work-permissions") == []


def test_a_coordinator_that_may_not_send_its_partitions_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "Action: [sqs:SendMessage]", "Action: [sqs:GetQueueUrl]", after=NIGHTLY)

    violation = found(
        planted.violations("work-permissions"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}Function",
        containing=f"may not sqs:SendMessage on {DAILY_JOB.stem}WorkQueue",
    )
    assert "sends the tick's partitions" in violation.message


@pytest.mark.parametrize(
    ("old", "new", "missing"),
    [
        (
            "Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes, sqs:ChangeMessageVisibility]",
            "Action: [sqs:ReceiveMessage, sqs:GetQueueAttributes, sqs:ChangeMessageVisibility]",
            f"sqs:DeleteMessage on {HOURLY_JOB.stem}WorkQueue",
        ),
        (
            "Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes, sqs:ChangeMessageVisibility]",
            "Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes]",
            f"sqs:ChangeMessageVisibility on {HOURLY_JOB.stem}WorkQueue",
        ),
        (
            f"                - !GetAtt {HOURLY_JOB.stem}WorkDeadLetterQueue.Arn\n",
            "",
            f"sqs:SendMessage on {HOURLY_JOB.stem}WorkDeadLetterQueue",
        ),
        (
            "Action: [dynamodb:GetItem, dynamodb:UpdateItem, dynamodb:Query, dynamodb:ConditionCheckItem]",
            "Action: [dynamodb:GetItem, dynamodb:UpdateItem, dynamodb:ConditionCheckItem]",
            "dynamodb:Query on LedgerTable",
        ),
        (
            "Action: [dynamodb:GetItem, dynamodb:UpdateItem, dynamodb:Query, dynamodb:ConditionCheckItem]",
            "Action: [dynamodb:GetItem, dynamodb:UpdateItem, dynamodb:Query]",
            "dynamodb:ConditionCheckItem on LedgerTable",
        ),
    ],
    ids=[
        "poll-without-delete",
        "no-backoff",
        "no-send-to-dead-letter-queue",
        "ledger-without-query",
        "ledger-without-check",
    ],
)
def test_a_worker_that_may_not_do_what_the_kit_does_is_caught(
    planted: PlantedCopy, old: str, new: str, missing: str
) -> None:
    planted.replace(TEMPLATE, old, new, after=HOURLY_WORKER)

    found(
        planted.violations("work-permissions"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=f"may not {missing}",
    )


def test_a_worker_that_may_not_send_to_its_own_work_queue_is_caught(planted: PlantedCopy) -> None:
    # Given the hourly worker allowed to send to its dead-letter queue only: no continuation, and no
    # buffered tick's start.
    planted.replace(TEMPLATE, f"                - !GetAtt {HOURLY_JOB.stem}WorkQueue.Arn\n", "", after=HOURLY_WORKER)

    violation = found(
        planted.violations("work-permissions"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=f"may not sqs:SendMessage on {HOURLY_JOB.stem}WorkQueue",
    )
    assert "fails at every hop" in violation.message
    assert "a buffered tick never starts" in violation.message


def test_sam_policy_templates_and_wildcards_count_as_grants(planted: PlantedCopy) -> None:
    # Given the worker's poll statement replaced by SAM's SQSPollerPolicy, and its sends by sqs:Send*
    planted.replace(
        TEMPLATE,
        "            - Sid: PollWorkQueue\n              Effect: Allow\n"
        "              Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes, "
        "sqs:ChangeMessageVisibility]\n"
        f"              Resource: !GetAtt {DAILY_JOB.stem}WorkQueue.Arn\n",
        f"        - SQSPollerPolicy:\n            QueueName: !GetAtt {DAILY_JOB.stem}WorkQueue.QueueName\n",
        resource=f"{DAILY_JOB.stem}WorkerFunction",
    )
    planted.replace(TEMPLATE, "Action: [sqs:SendMessage]", "Action: ['sqs:Send*']", after=NIGHTLY_WORKER)

    assert planted.violations("work-permissions") == []


def test_a_grant_on_an_index_is_not_a_grant_on_its_table(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "              Resource: !GetAtt LedgerTable.Arn\n",
        '              Resource: !Sub "${LedgerTable.Arn}/index/succeeded-by-time"\n',
        after=NIGHTLY_WORKER,
    )

    found(
        planted.violations("work-permissions"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerFunction",
        containing="may not dynamodb:GetItem on LedgerTable",
    )


def test_a_whole_arn_written_with_sub_counts_as_a_grant(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "              Resource: !GetAtt LedgerTable.Arn\n",
        '              Resource: !Sub "${LedgerTable.Arn}"\n',
        after=NIGHTLY_WORKER,
    )

    assert planted.violations("work-permissions") == []
