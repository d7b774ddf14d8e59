"""Rule `work-queue-redrive`: a partition that keeps failing ends in a retained dead-letter queue an
alarm watches, after a bounded number of tries, next to the items a worker set aside.

Every queue an event source mapping reads has a `RedrivePolicy` to a queue of the template, with
`maxReceiveCount` from 5 (Lambda counts a receive for a throttled batch too, so fewer can set a
healthy message aside) to 10 (each try waits out the visibility timeout). The dead-letter queue
keeps messages longer than the work queue (a standard queue's message keeps its first enqueue
time when it is moved), is `Retain` on delete and replace, is watched by an alarm from its first
message, and is the queue the worker sends failed items to (`WORK_DEAD_LETTER_QUEUE_URL`), so
`clockless work redrive <job>` has one place to move back from. The worker's `WORK_MAX_RECEIVES` is
the queue's `maxReceiveCount`, so the run on a message's last receive knows it: failing, it names
its partition on the tick (which then settles `failed` at once instead of when the tick reaper
finds it past its bound).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.failure_paths import queue_watched
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.queues import Queue, resource_id

WORK_QUEUE_REDRIVE: Final = "work-queue-redrive"
DEAD_LETTER_VARIABLE: Final = "WORK_DEAD_LETTER_QUEUE_URL"
# The worker's count of its queue's receives: a run failing the last one names its partition on the
# tick (clockless.fanout.redelivery); unset, the kit assumes this.
MAX_RECEIVES_VARIABLE: Final = "WORK_MAX_RECEIVES"
KIT_DEFAULT_RECEIVES: Final = 5
MIN_RECEIVES: Final = 5
MAX_RECEIVES: Final = 10


def check_work_queue_redrive(project: Project) -> Iterator[Violation]:
    template = project.template
    checked: set[str] = set()
    for mapping in template.event_source_mappings.values():
        queue = template.queues.get(mapping.source or "")
        if queue is None:
            continue
        if queue.logical_id not in checked:
            checked.add(queue.logical_id)
            yield from _check_queue(project, queue)
        worker = template.functions.get(mapping.function or "")
        if worker is not None and queue.max_receive_count is not None:
            stated = worker.environment.get(MAX_RECEIVES_VARIABLE, str(KIT_DEFAULT_RECEIVES))
            if str(stated) != str(queue.max_receive_count):
                yield Violation(
                    WORK_QUEUE_REDRIVE,
                    project.template_file,
                    worker.logical_id,
                    f"its {MAX_RECEIVES_VARIABLE} is {stated!r}, but its work queue {queue.logical_id} dead-letters "
                    f"after {queue.max_receive_count} receives: a partition failing on its last receive "
                    "would not be named on its tick (the run would not know it is the last), which would stay "
                    "started until the tick reaper finds it past its bound",
                    f'{MAX_RECEIVES_VARIABLE}: "{queue.max_receive_count}"',
                )
        if worker is not None and queue.dead_letter_queue is not None:
            named = resource_id(worker.environment.get(DEAD_LETTER_VARIABLE))
            if named != queue.dead_letter_queue:
                yield Violation(
                    WORK_QUEUE_REDRIVE,
                    project.template_file,
                    worker.logical_id,
                    f"its {DEAD_LETTER_VARIABLE} names {named!r}, but its work queue {queue.logical_id} dead-letters "
                    f"to {queue.dead_letter_queue}: failed items and failed partitions would wait in two places",
                    f"{DEAD_LETTER_VARIABLE}: !Ref {queue.dead_letter_queue}",
                )


def _check_queue(project: Project, queue: Queue) -> Iterator[Violation]:
    template = project.template

    def violation(message: str, fix: str, resource: str = queue.logical_id) -> Violation:
        return Violation(WORK_QUEUE_REDRIVE, project.template_file, resource, message, fix)

    dead_letter = template.queues.get(queue.dead_letter_queue or "")
    if dead_letter is None:
        yield violation(
            "no RedrivePolicy to a queue of this template: a partition that always fails is retried until the "
            "message expires, then lost",
            f"RedrivePolicy: {{deadLetterTargetArn: !GetAtt <DLQ>.Arn, maxReceiveCount: {MIN_RECEIVES}}}",
        )
        return
    receives = queue.max_receive_count
    if receives is None or not MIN_RECEIVES <= receives <= MAX_RECEIVES:
        stated = (queue.redrive_policy or {}).get("maxReceiveCount")
        yield violation(
            f"RedrivePolicy.maxReceiveCount is {stated!r}: state {MIN_RECEIVES} to {MAX_RECEIVES} (throttled "
            "receives count too; each try waits out the visibility timeout)",
            f"maxReceiveCount: {MIN_RECEIVES}",
        )
    if not dead_letter.retained:
        yield violation(
            f"its dead-letter queue {dead_letter.logical_id} is not Retain on delete and replace: the partitions "
            "and items set aside go with the stack",
            f"DeletionPolicy: Retain and UpdateReplacePolicy: Retain on {dead_letter.logical_id}",
            dead_letter.logical_id,
        )
    kept, source_kept = dead_letter.message_retention, queue.message_retention
    if kept is None or source_kept is None or kept <= source_kept:
        yield violation(
            f"its dead-letter queue keeps messages {kept!r} s, not longer than the work queue's {source_kept!r} s: "
            "a moved message keeps its first enqueue time and can expire before anyone redrives it",
            f"MessageRetentionPeriod: 1209600 on {dead_letter.logical_id}, less on {queue.logical_id}",
            dead_letter.logical_id,
        )
    if not queue_watched(dead_letter.logical_id, template):
        yield violation(
            f"its dead-letter queue {dead_letter.logical_id} is watched by no alarm from its first message: "
            "a tick's failed partitions wait unseen",
            f"an AWS/SQS ApproximateNumberOfMessagesVisible > 0 alarm with AlarmActions on "
            f"!GetAtt {dead_letter.logical_id}.QueueName",
            dead_letter.logical_id,
        )


WORK_QUEUE_REDRIVE_RULE = Rule(
    WORK_QUEUE_REDRIVE,
    "every work queue dead-letters after 5-10 receives to a retained queue that outlives it, is alarmed from its "
    "first message and is the worker's WORK_DEAD_LETTER_QUEUE_URL; the worker states its receives",
    check_work_queue_redrive,
)
