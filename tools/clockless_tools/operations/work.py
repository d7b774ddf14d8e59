"""`clockless work show|redrive <job>`: a fanned-out job's work queue and its dead-letter queue.

The queues are found from the template as Lambda wires them: the job's function names its work
queue in its environment (`!Ref <Queue>`), an event source mapping feeds that queue to the
worker, and the queue's RedrivePolicy names the dead-letter queue. What lands there: an `items`
message per batch of items the workers could not apply (docs/fan-out.md), or a partition message
received maxReceiveCount times without success.

`show` changes nothing: SQS has no peek (receiving a message, even to make it visible again at
once as the console's "poll for messages" does, raises the receive count it reports), so it reads
the queues' depths with GetQueueAttributes and the dead-lettered partitions from their ledger
records (their receive count reached maxReceiveCount, and their last error), over the dead-letter
queue's retention. `show --messages` reads the messages' bodies too, by receiving each one: it
says so, and reports each receive count as it was before that read. `redrive`
sends each message back to the work queue, then deletes it from the dead-letter queue (a message
sent twice, should the delete fail, is harmless: workers apply each item once). SQS's own
StartMessageMoveTask would move them server-side, but asynchronously and without saying what
moved; this way the command reports each message and works the same on the local runtime.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

from clockless import format_scheduled_time
from clockless.fanout.messages import KIND_PARTITION
from clockless_tools.local.event_sources import SqsEventSource, fed_by
from clockless_tools.operations.progress import PartitionState, fanned_out_ticks
from clockless_tools.operations.targets import JobTarget, OperationError, require_job
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template

_BATCH: Final = 10
# Long enough to read the whole queue before the first message read comes back on its own.
_PEEK_VISIBILITY: Final = 60
_MAX_MESSAGES: Final = 100_000
# SQS's own default, for a dead-letter queue that states none.
_DEFAULT_RETENTION_SECONDS: Final = 345_600


@dataclass(frozen=True)
class WorkQueues:
    job: str
    worker: str
    queue: str
    dead_letter_queue: str
    max_receive_count: int


def work_queues(template: Template, job: str) -> WorkQueues:
    """The job's work queue, its worker and dead-letter queue, or why the job has none."""
    require_job(template, job)
    function = template.function_for_job(job).logical_id
    try:
        sources: list[SqsEventSource] = fed_by(template, function)
    except TemplateError as error:
        raise OperationError(str(error)) from None
    if not sources:
        raise OperationError(
            f"{job} does not fan out: {function} names no queue that an event source mapping feeds to a worker"
        )
    source = sources[0]
    if source.queue.dead_letter_queue is None or source.queue.max_receive_count is None:
        raise OperationError(f"{source.queue.logical_id} has no RedrivePolicy, so {job} has no work dead-letter queue")
    return WorkQueues(
        job, source.function_id, source.queue.logical_id, source.queue.dead_letter_queue, source.queue.max_receive_count
    )


@dataclass(frozen=True)
class DeadLetter:
    """One message of the work dead-letter queue, as a reader wants it."""

    message_id: str
    kind: str
    scheduled_time: str | None
    partition: str | None
    items: int | None
    error: str | None
    receive_count: int
    sent_at_ms: int
    body: str

    @classmethod
    def of(cls, message: dict[str, Any]) -> DeadLetter:
        body = str(message.get("Body", ""))
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        data = data if isinstance(data, dict) else {}
        # An items message counts its failed keys (a row that did not decode has a key, not an item).
        keys = data.get("keys")
        items = keys if isinstance(keys, list) and keys else data.get("items")
        attributes = message.get("Attributes") or {}
        return cls(
            message_id=str(message["MessageId"]),
            kind=str(data.get("kind") or "not a work message"),
            scheduled_time=data.get("scheduled_time"),
            partition=None if data.get("partition") is None else str(data["partition"]),
            items=len(items) if isinstance(items, list) else None,
            error=data.get("error"),
            receive_count=int(attributes.get("ApproximateReceiveCount", 0)),
            sent_at_ms=int(attributes.get("SentTimestamp", 0)),
            body=body,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "kind": self.kind,
            "scheduled_time": self.scheduled_time,
            "partition": self.partition,
            "items": self.items,
            "error": self.error,
            "receive_count": self.receive_count,
            "sent_at_ms": self.sent_at_ms,
        }


@dataclass(frozen=True)
class WorkShow:
    queues: WorkQueues
    # the work queue's messages: visible, in flight (a worker has them), delayed
    visible: int
    in_flight: int
    # the dead-letter queue's messages (visible and in flight: a redrive under way holds some)
    dead_letter_messages: int
    # the dead-lettered partitions the ledger names, or with `messages`, every message read
    dead_letters: list[DeadLetter]
    # whether the messages were received to read them (each one's receive count then rose by one)
    read_messages: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.queues.job,
            "worker": self.queues.worker,
            "queue": self.queues.queue,
            "visible": self.visible,
            "in_flight": self.in_flight,
            "dead_letter_queue": self.queues.dead_letter_queue,
            "dead_letter_messages": self.dead_letter_messages,
            "read_messages": self.read_messages,
            "dead_letters": [letter.as_dict() for letter in self.dead_letters],
        }


def _receive(client: Any, url: str, *, visibility: int) -> list[dict[str, Any]]:
    response = client.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=_BATCH,
        VisibilityTimeout=visibility,
        WaitTimeSeconds=0,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    return list(response.get("Messages") or [])


def _depth(client: Any, url: str) -> tuple[int, int]:
    attributes = client.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes.get("ApproximateNumberOfMessages", 0)), int(
        attributes.get("ApproximateNumberOfMessagesNotVisible", 0)
    )


def show(target: JobTarget, template: Template, job: str, *, now: datetime, messages: bool = False) -> WorkShow:
    """The work queue's depth, the dead-letter queue's, and what is in it: the dead-lettered
    partitions the ledger names (changing nothing), or with `messages` every message, received to
    read it and made visible again at once."""
    queues = work_queues(template, job)
    client = target.sqs()
    work_url, dead_url = target.queue_url(queues.queue), target.queue_url(queues.dead_letter_queue)
    visible, in_flight = _depth(client, work_url)
    dead_visible, dead_in_flight = _depth(client, dead_url)
    records = _dead_lettered_records(target, template, queues, now=now)
    letters = _read_messages(client, dead_url, records) if messages else list(records.values())
    return WorkShow(
        queues,
        visible=visible,
        in_flight=in_flight,
        dead_letter_messages=dead_visible + dead_in_flight,
        dead_letters=sorted(letters, key=lambda letter: (letter.sent_at_ms, letter.message_id)),
        read_messages=messages,
    )


def _dead_lettered_records(
    target: JobTarget, template: Template, queues: WorkQueues, *, now: datetime
) -> dict[tuple[str, str], DeadLetter]:
    """Per (tick, partition), the partitions whose ledger record says their message was dead-lettered,
    over the dead-letter queue's retention: what a message there would say, and its last error."""
    retention = template.queues[queues.dead_letter_queue].message_retention or _DEFAULT_RETENTION_SECONDS
    ticks = fanned_out_ticks(
        target.ledger(),
        queues.job,
        now - timedelta(seconds=retention),
        now + timedelta(seconds=1),
        now_ms=int(now.timestamp() * 1000),
        max_receives=queues.max_receive_count,
    )
    found: dict[tuple[str, str], DeadLetter] = {}
    for tick in ticks:
        when = format_scheduled_time(tick.scheduled_time)
        for partition in tick.partitions:
            if partition.state is PartitionState.DEAD_LETTERED:
                found[(when, partition.partition)] = DeadLetter(
                    message_id="-",
                    kind=KIND_PARTITION,
                    scheduled_time=when,
                    partition=partition.partition,
                    items=None,
                    error=partition.last_error,
                    receive_count=partition.receives or queues.max_receive_count,
                    sent_at_ms=int(tick.scheduled_time.timestamp() * 1000),
                    body="",
                )
    return found


def _read_messages(client: Any, url: str, records: dict[tuple[str, str], DeadLetter]) -> list[DeadLetter]:
    """Every message, received (SQS has no peek) and made visible again at once; each receive count
    as it was before this read, and a partition's error from its ledger record."""
    seen: dict[str, DeadLetter] = {}
    handles: list[str] = []
    try:
        while len(seen) < _MAX_MESSAGES:
            received = [m for m in _receive(client, url, visibility=_PEEK_VISIBILITY) if m["MessageId"] not in seen]
            if not received:
                break
            for message in received:
                letter = DeadLetter.of(message)
                record = records.get((str(letter.scheduled_time), str(letter.partition)))
                recorded = record.error if record is not None and letter.kind == KIND_PARTITION else None
                seen[letter.message_id] = replace(
                    letter, receive_count=max(0, letter.receive_count - 1), error=letter.error or recorded
                )
                handles.append(message["ReceiptHandle"])
    finally:
        _make_visible(client, url, handles)
    return list(seen.values())


def _make_visible(client: Any, url: str, handles: list[str]) -> None:
    for start in range(0, len(handles), _BATCH):
        client.change_message_visibility_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                for i, handle in enumerate(handles[start : start + _BATCH])
            ],
        )


@dataclass(frozen=True)
class Redriven:
    queues: WorkQueues
    moved: list[DeadLetter]
    # messages sent back but not deleted from the dead-letter queue (they stay there as well)
    not_deleted: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.queues.job,
            "from": self.queues.dead_letter_queue,
            "to": self.queues.queue,
            "moved": [letter.as_dict() for letter in self.moved],
            "not_deleted": self.not_deleted,
        }


def redrive(target: JobTarget, template: Template, job: str) -> Redriven:
    """Every message of the work dead-letter queue sent back to the work queue, then deleted."""
    queues = work_queues(template, job)
    client = target.sqs()
    work_url, dead_url = target.queue_url(queues.queue), target.queue_url(queues.dead_letter_queue)
    moved: list[DeadLetter] = []
    not_deleted: list[str] = []
    while len(moved) < _MAX_MESSAGES:
        messages = _receive(client, dead_url, visibility=_PEEK_VISIBILITY)
        if not messages:
            break
        sent = client.send_message_batch(
            QueueUrl=work_url,
            Entries=[
                {"Id": str(i), "MessageBody": m["Body"], **_attributes(m.get("MessageAttributes"))}
                for i, m in enumerate(messages)
            ],
        )
        if sent.get("Failed"):
            failure = sent["Failed"][0]
            # What was sent stays in both queues until the next redrive: harmless, said here.
            raise OperationError(
                f"SendMessageBatch to {queues.queue} refused a message ({failure.get('Code')}: "
                f"{failure.get('Message')}); {len(moved)} moved before it, the rest left in {queues.dead_letter_queue}"
            )
        deleted = client.delete_message_batch(
            QueueUrl=dead_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )
        failed_ids = {entry["Id"] for entry in deleted.get("Failed") or []}
        for i, message in enumerate(messages):
            moved.append(DeadLetter.of(message))
            if str(i) in failed_ids:
                not_deleted.append(str(message["MessageId"]))
    return Redriven(queues, moved, not_deleted)


def _attributes(attributes: dict[str, Any] | None) -> dict[str, Any]:
    return {"MessageAttributes": attributes} if attributes else {}
