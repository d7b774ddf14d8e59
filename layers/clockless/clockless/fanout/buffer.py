"""Starting a tick buffered behind another, once the other is settled (overlap policy `buffer`).

On a fanned-out job (clockless.overlap), a tick recorded `buffered` behind one still running is
started by the worker that finds the earlier tick settled.

Two steps, one per message: the delivery that settles a tick sends the buffered tick's `start`
message (`release_buffered`, from clockless.fanout.finish), and the delivery of that message
claims the buffered tick and fans it out (`start_buffered`, routed by the dispatcher)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clockless.errors import DeclarationError
from clockless.fanout.messages import KIND_START, WorkMessage
from clockless.fanout.tick_store import TickStore
from clockless.fanout.trust import UntrustedMessageError
from clockless.ledger import RunLedger
from clockless.overlap import buffered_after
from clockless.state import Outcome
from clockless.tick import Tick

if TYPE_CHECKING:
    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget


def _ledger(worker: PartitionWorker, dynamodb: Any) -> RunLedger:
    settings = worker.settings()
    return RunLedger(settings.ledger_table, dynamodb, retention_seconds=settings.ledger_retention_seconds)


def release_buffered(worker: PartitionWorker, done: WorkMessage, *, budget: Budget) -> None:
    """`done`'s tick is settled: the tick buffered behind it gets a start message. Every
    delivery that finds the tick settled sends it (a death before sending is made good by the
    redelivery, at one Query per settled finisher call); the start itself happens once."""
    buffered = buffered_after(_ledger(worker, worker.clients()[0]), done.job, done.time_text)
    if buffered is None:
        return
    after = {"after": done.time_text}
    start = WorkMessage(KIND_START, done.job, buffered.scheduled_time, buffered.trigger, "", after)
    worker.work_queue().send(start.body(), budget=budget, what="SendMessage of a buffered tick's start")
    worker.job.logger.info("buffered tick released", extra={"buffered": start.tick_key})


def start_buffered(worker: PartitionWorker, message: WorkMessage) -> Outcome:
    """Start a buffered tick: claimed in the ledger (`buffered` becomes `started` with its
    partitions_total, once), then the job's function fans it out as its coordinator would have.
    A redelivered start message sends the partitions again (duplicates change nothing)."""
    from clockless.run import JobRun  # noqa: PLC0415 - workers without a buffered job never load it

    job = worker.job
    dynamodb = worker.clients()[0]
    tick = Tick(message.job, message.scheduled_time, None, 1, None, message.trigger)
    after = str(message.params.get("after", ""))
    store = TickStore(dynamodb, worker.settings().ledger_table, message.job, message.time_text)
    if not store.release_buffered(released_by=after, partitions_total=len(worker.partitions)):
        raise UntrustedMessageError(message.tick_key, "-", f"not a tick buffered behind {after}")
    if job.function is None:
        raise DeclarationError(f"job {job.name!r} has no @job.handler function to start a buffered tick with")
    ledger = _ledger(worker, dynamodb)
    job.function(JobRun(tick, load_last_success=lambda: ledger.last_success_before(tick.job, tick.scheduled_time)))
    job.logger.info("buffered tick started", extra={"after": after})
    return Outcome.STARTED
