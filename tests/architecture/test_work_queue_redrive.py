"""Rule `work-queue-redrive`: planted work queues whose failing partitions are lost, retried without
end, kept in a queue that goes with the stack or expires first, or set aside unseen; each caught."""

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
HOURLY_QUEUE = f"  {HOURLY_JOB.stem}WorkQueue:\n"
HOURLY_DLQ = f"  {HOURLY_JOB.stem}WorkDeadLetterQueue:\n"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("work-queue-redrive") == []


def test_a_work_queue_without_a_redrive_policy_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "      RedrivePolicy:\n", "      XRedrivePolicy:\n", after=HOURLY_QUEUE)

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkQueue",
        containing="no RedrivePolicy to a queue of this template",
    )


def test_a_redrive_to_an_arn_outside_the_template_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"deadLetterTargetArn: !GetAtt {HOURLY_JOB.stem}WorkDeadLetterQueue.Arn",
        "deadLetterTargetArn: arn:aws:sqs:us-east-1:123456789012:elsewhere",
        resource=f"{HOURLY_JOB.stem}WorkQueue",
    )

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkQueue",
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
        resource=f"{DAILY_JOB.stem}WorkQueue",
        containing="RedrivePolicy.maxReceiveCount is",
    )


def test_a_dead_letter_queue_that_goes_with_the_stack_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "    UpdateReplacePolicy: Retain\n", "", after=HOURLY_DLQ)

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkDeadLetterQueue",
        containing="not Retain on delete and replace",
    )


def test_a_dead_letter_queue_that_expires_before_its_work_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "      MessageRetentionPeriod: 1209600\n", "      MessageRetentionPeriod: 345600\n", after=HOURLY_DLQ
    )

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkDeadLetterQueue",
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
    planted.replace(TEMPLATE, old, new, after=f"  {HOURLY_JOB.stem}WorkDeadLetterAlarm:\n")

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkDeadLetterQueue",
        containing="watched by no alarm from its first message",
    )


def test_failed_items_sent_somewhere_else_than_the_dead_letter_queue_are_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"WORK_DEAD_LETTER_QUEUE_URL: !Ref {DAILY_JOB.stem}WorkDeadLetterQueue",
        "WORK_DEAD_LETTER_QUEUE_URL: !Ref JobFailureQueue",
        resource=f"{DAILY_JOB.stem}WorkerFunction",
    )

    found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerFunction",
        containing="would wait in two places",
    )


# The worker's statement of its queue's figures: (its variable and value, the queue's attribute and
# a planted other value, what the violation says, and the harm it names).
STATED_FIGURES = {
    "receives": ("WORK_MAX_RECEIVES", "5", "maxReceiveCount: 5", "maxReceiveCount: 6", "dead-letters after"),
}
HARMS = {
    "receives": ["would not be named on its tick", "until the tick reaper finds it past its bound"],
}


@pytest.mark.parametrize("figure", sorted(STATED_FIGURES))
@pytest.mark.parametrize("stated", ["another", None])
def test_a_worker_stating_other_figures_than_its_queue_is_caught(
    planted: PlantedCopy, figure: str, stated: str | None
) -> None:
    # Given the hourly worker's figure (its receives, its visibility timeout) other than its
    # queue's, or left to the kit's default while the queue (planted) states another.
    variable, value, attribute, other, containing = STATED_FIGURES[figure]
    worker = f"  {HOURLY_JOB.stem}WorkerFunction:\n"
    if stated is None:
        planted.replace(TEMPLATE, attribute, other, after=HOURLY_QUEUE)
        planted.replace(TEMPLATE, f'          {variable}: "{value}"\n', "", after=worker)
    else:
        planted.replace(TEMPLATE, f'{variable}: "{value}"', f'{variable}: "{int(value) - 1}"', after=worker)

    violation = found(
        planted.violations("work-queue-redrive"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=containing,
    )
    for harm in HARMS[figure]:
        assert harm in violation.message
