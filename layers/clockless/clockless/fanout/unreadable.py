"""A work message this worker cannot read, for a tick it names: failed by name, never dropped.

Between a deploy's updates of the coordinator and the workers, a worker can receive a body written
by code of another version, or for a partition beyond its own count (a coordinator with more
shards). Each receive fails the message with an ERROR line naming why, and it comes back soon
(the backoff of a failed run): the deploy's other half usually lands within those receives, and
the message is then read. On its last receive a `partition` message's partition is named on its
tick entry (`partitions_exhausted`) and the finisher settles the tick `failed` naming it, as for a
partition whose run failed every receive; SQS moves the message to the work DLQ, and `clockless
work redrive` runs it once the workers read it. The name holds only if the tick has the partition
(`count-unrun`): its place among this worker's partitions, or, for one beyond its count, a tick
fanned out into more partitions than this worker runs (partition lists only grow at their end).

A partition within the worker's count of a tick fanned out into more is readable but refused
(clockless.fanout.trust: the worker cannot run that tick's count); on its last receive it is named
the same way (`refused`), so every partition of such a tick is named and the tick settles `failed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import EphemeralMetrics

from clockless.fanout.finish import settle
from clockless.fanout.messages import KIND_PARTITION, WorkMessage
from clockless.fanout.partition import lease_owner
from clockless.fanout.types import TickUnclaimed
from clockless.throttle import Budget
from clockless.tick import format_scheduled_time

if TYPE_CHECKING:
    from clockless.fanout.messages import UnreadableMessageError
    from clockless.fanout.trust import UntrustedMessageError
    from clockless.fanout.worker import PartitionWorker


def unreadable(worker: PartitionWorker, error: UnreadableMessageError, context: Any, *, receives: int) -> bool:
    """The ERROR line for an unreadable message and, on its last receive, its partition named on its
    tick. True: named (the caller raises the error on, for SQS and the work DLQ)."""
    envelope = error.envelope
    tick_key = f"{envelope.job}@{format_scheduled_time(envelope.scheduled_time)}"
    settings = worker.settings()
    last = receives >= settings.max_receives
    worker.job.logger.error(
        "work message unreadable; nothing was written",
        extra={
            "reason": str(error),
            "tick": tick_key,
            "partition": envelope.partition,
            "receives": receives,
            "last_receive": last,
        },
    )
    if not last or envelope.kind != KIND_PARTITION or not envelope.partition:
        return False
    mine = worker.partitions
    least = mine.index(envelope.partition) + 1 if envelope.partition in mine else len(mine) + 1
    message = WorkMessage(
        KIND_PARTITION, envelope.job, envelope.scheduled_time, envelope.trigger, envelope.partition, {}
    )
    metrics = EphemeralMetrics(namespace=settings.metrics_namespace, service=worker.job.name)
    metrics.add_dimension(name="job", value=worker.job.name)
    try:
        budget = Budget(context, settings.time_budget_ms / 1000, worker.clock)
        return named_unrun(worker, message, lease_owner(context), budget, metrics, least=least)
    finally:
        if metrics.metric_set:
            metrics.flush_metrics()


def refused(
    worker: PartitionWorker,
    message: WorkMessage,
    error: UntrustedMessageError,
    *,
    owner: str,
    budget: Budget,
    metrics: EphemeralMetrics,
    receives: int,
) -> bool:
    """A `partition` message refused because its tick was fanned out into more partitions than this
    worker runs (a shard count lowered between them): its partition is the tick's but this worker
    cannot run that tick, so on its last receive it is named as an unreadable one is. True: named."""
    if not error.more_partitions or message.kind != KIND_PARTITION:
        return False
    if receives < worker.settings().max_receives:
        return False
    least = worker.partitions.index(message.partition) + 1
    return named_unrun(worker, message, owner, budget, metrics, least=least)


def named_unrun(
    worker: PartitionWorker, message: WorkMessage, owner: str, budget: Budget, metrics: EphemeralMetrics, *, least: int
) -> bool:
    """The partition named exhausted on its tick, if the tick has it, and the finisher run."""
    try:
        if worker.final_records(message, owner, budget).mark_unrun(least):
            worker.job.logger.error(
                "partition's message unreadable on its last receive; it goes to the work DLQ",
                extra={"replay": f"clockless work redrive {message.job}"},
            )
            settle(worker, message, budget, metrics)
    except TickUnclaimed as error:  # not a partition of that tick: nothing of it waits for this one
        worker.job.logger.error("unreadable message names no partition of its tick", extra={"reason": str(error)})
        return False
    except Exception:  # the failure is what SQS must see, not this record's
        worker.job.logger.warning("could not record the unreadable partition in the ledger", exc_info=True)
        return False
    return True
