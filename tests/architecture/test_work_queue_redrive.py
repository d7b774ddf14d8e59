"""Rule `work-queue-redrive`: planted work queues whose failing partitions are lost, retried without
end, kept in a queue that goes with the stack or expires first, or set aside unseen; each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
NIGHTLY_QUEUE = "  WindowGenerationWorkQueue:\n"
HOURLY_QUEUE = "  SessionCleanupWorkQueue:\n"
HOURLY_DLQ = "  SessionCleanupWorkDeadLetterQueue:\n"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("work-queue-redrive") == []


def test_a_work_queue_without_a_redrive_policy_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "      RedrivePolicy:\n", "      XRedrivePolicy:\n", after=HOURLY_QUEUE)

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource="SessionCleanupWorkQueue",
        containing="no RedrivePolicy to a queue of this template",
    )


def test_a_redrive_to_an_arn_outside_the_template_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "deadLetterTargetArn: !GetAtt SessionCleanupWorkDeadLetterQueue.Arn",
        "deadLetterTargetArn: arn:aws:sqs:us-east-1:123456789012:elsewhere",
        resource="SessionCleanupWorkQueue",
    )

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource="SessionCleanupWorkQueue",
        containing="no RedrivePolicy to a queue of this template",
    )


@pytest.mark.parametrize(
    "receives", ["1", "100", "!Ref AWS::NoValue"], ids=["throttles-dead-letter", "hours", "unstated"]
)
def test_an_unbounded_or_too_eager_receive_count_is_caught(planted: PlantedCopy, receives: str) -> None:
    planted.replace(
        TEMPLATE, "        maxReceiveCount: 5\n", f"        maxReceiveCount: {receives}\n", after=NIGHTLY_QUEUE
    )

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource="WindowGenerationWorkQueue",
        containing="RedrivePolicy.maxReceiveCount is",
    )


def test_a_dead_letter_queue_that_goes_with_the_stack_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "    UpdateReplacePolicy: Retain\n", "", after=HOURLY_DLQ)

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource="SessionCleanupWorkDeadLetterQueue",
        containing="not Retain on delete and replace",
    )


def test_a_dead_letter_queue_that_expires_before_its_work_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "      MessageRetentionPeriod: 1209600\n", "      MessageRetentionPeriod: 345600\n", after=HOURLY_DLQ
    )

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource="SessionCleanupWorkDeadLetterQueue",
        containing="not longer than the work queue's 345600 s",
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("      Threshold: 0\n", "      Threshold: 10\n"),
        ("      AlarmActions: [!Ref AlarmTopic]\n", ""),
        ("      MetricName: ApproximateNumberOfMessagesVisible\n", "      MetricName: NumberOfMessagesDeleted\n"),
    ],
    ids=["after-a-backlog", "tells-nobody", "wrong-metric"],
)
def test_a_dead_letter_queue_nobody_hears_of_is_caught(planted: PlantedCopy, old: str, new: str) -> None:
    planted.replace(TEMPLATE, old, new, after="  SessionCleanupWorkDeadLetterAlarm:\n")

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource="SessionCleanupWorkDeadLetterQueue",
        containing="watched by no alarm from its first message",
    )


def test_failed_items_sent_somewhere_else_than_the_dead_letter_queue_are_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "WORK_DEAD_LETTER_QUEUE_URL: !Ref WindowGenerationWorkDeadLetterQueue",
        "WORK_DEAD_LETTER_QUEUE_URL: !Ref JobFailureQueue",
        resource="WindowGenerationWorkerFunction",
    )

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource="WindowGenerationWorkerFunction",
        containing="would wait in two places",
    )
