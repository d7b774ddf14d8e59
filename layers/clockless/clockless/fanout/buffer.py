"""The overlap policy `buffer` on a fanned-out job (clockless.overlap): a tick recorded `buffered`
behind one still running is started by the worker that finds the earlier tick settled."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

from clockless.fanout.messages import KIND_START, WorkMessage
from clockless.fanout.trust import UntrustedMessageError
from clockless.ledger import RunLedger
from clockless.overlap import buffered_after, release_update
from clockless.throttle import Budget, retry_throttled
from clockless.tick import Tick

if TYPE_CHECKING:
    from clockless.fanout.coordinator import FanOut
    from clockless.fanout.settings import WorkerSettings
    from clockless.job import ScheduledJob

OUTCOME_STARTED: Final = "buffered tick started"


def _ledger(dynamodb: Any, settings: WorkerSettings) -> RunLedger:
    return RunLedger(settings.ledger_table, dynamodb, retention_seconds=settings.ledger_retention_seconds)


def release_buffered(
    dynamodb: Any, sqs: Any, settings: WorkerSettings, job: ScheduledJob, done: WorkMessage, *, budget: Budget
) -> None:
    """`done`'s tick is settled: the tick buffered behind it gets a start message. Every
    delivery that finds the tick settled sends it (a death before sending is made good by the
    redelivery, at one Query per settled finisher call); the start itself happens once."""
    buffered = buffered_after(_ledger(dynamodb, settings), done.job, done.time_text)
    if buffered is None:
        return
    after = {"after": done.time_text}
    start = WorkMessage(KIND_START, done.job, buffered.scheduled_time, buffered.trigger, "", after)
    send = functools.partial(sqs.send_message, QueueUrl=settings.work_queue_url, MessageBody=start.body())
    retry_throttled(send, budget=budget, what="SendMessage of a buffered tick's start")
    job.logger.info("buffered tick released", extra={"buffered": start.tick_key})


def start_buffered(dynamodb: Any, settings: WorkerSettings, fan_out: FanOut, message: WorkMessage) -> str:
    """Start a buffered tick: claimed in the ledger (`buffered` becomes `started` with its
    partitions_total, once), then the job's function fans it out as its coordinator would have.
    A redelivered start message sends the partitions again (duplicates change nothing)."""
    from clockless.job import JobRun  # noqa: PLC0415 - workers without a buffered job never load it

    job = fan_out.job
    tick = Tick(message.job, message.scheduled_time, None, 1, None, message.trigger)
    after = str(message.params.get("after", ""))
    update = release_update(
        _ledger(dynamodb, settings), tick, released_by=after, partitions_total=len(fan_out.partitions)
    )
    try:
        dynamodb.update_item(**update)
    except dynamodb.exceptions.ConditionalCheckFailedException:
        raise UntrustedMessageError(message.tick_key, "-", f"not a tick buffered behind {after}") from None
    if job.function is None:
        raise RuntimeError(f"job {job.name!r} has no @job.handler function to start a buffered tick with")
    ledger = _ledger(dynamodb, settings)
    job.function(JobRun(tick, load_last_success=lambda: ledger.last_success_before(tick.job, tick.scheduled_time)))
    job.logger.info("buffered tick started", extra={"after": after})
    return OUTCOME_STARTED
