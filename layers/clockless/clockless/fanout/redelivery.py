"""A partition message that failed: back in seconds, and on its last receive recorded in the ledger.

SQS shows a message a worker failed again only after the work queue's visibility timeout (1,800 s,
6 x the worker's Timeout, so a message the poller holds while Lambda throttles its batch is not
received twice). So before it runs a message, the dispatcher hides it only until the attempt is
surely over plus 10 s (`hold_for_attempt`: `ChangeMessageVisibility`, the attempt's remaining
time; the run's lease ends with the attempt too): a worker that dies (its timeout, a crash) is
retried then, 10 s after a timeout, at most the worker's Timeout + 10 s after the receive. A run
that *raised* is over, so it notes why on its partition's record and releases the lease
(`run_failed`), and the dispatcher shortens the message's wait further (`come_back_soon`): 10 s
after the first failure, doubling per receive, capped at 300 s (clockless.fanout.retry); a
partition that fails once is retried within a minute. One that could not release its partition's
lease keeps the first bound (the redelivery would find the lease held before).

A run that raises on its message's last receive (`receives >= WORK_MAX_RECEIVES`, the queue's
maxReceiveCount) adds its partition to the tick entry's `partitions_exhausted`, so the finisher
settles the tick `failed` naming the partition instead of leaving it `started` for ever; the
message goes on to the work DLQ, and when `clockless work redrive` runs it to the end, the done
transaction takes the partition out of the set and the tick settles again. A run that *dies* there
runs none of this, nor does one whose receive never reaches the handler: the tick reaper settles
that tick once its bound has passed, naming the partition (clockless.reaper).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from clockless.fanout.finish import settle
from clockless.fanout.retry import HAND_ON_MARGIN_SECONDS, after_attempt_seconds, redelivery_backoff_seconds
from clockless.fanout.store import one_line
from clockless.throttle import remaining_ms, retry_throttled

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget

_LEASE_HELD: Final = "clockless_lease_held"


def run_failed(
    worker: PartitionWorker,
    message: WorkMessage,
    budget: Budget,
    metrics: EphemeralMetrics,
    *,
    owner: str,
    receives: int,
    error: BaseException,
) -> None:
    """A partition run raised `error` (its caller raises it on, for SQS): on the message's last
    receive its partition recorded exhausted first (a death in between, or a failure to name it,
    leaves it to the tick reaper), then noted for operators with the lease released."""
    if receives >= worker.settings().max_receives:
        exhausted(worker, message, owner, budget, metrics)
    if not note_failure(worker, message, owner, budget, error):
        lease_still_held(error)


def note_failure(
    worker: PartitionWorker,
    message: WorkMessage,
    owner: str,
    budget: Budget,
    error: BaseException,
) -> bool:
    """`last_error` on the partition record for operators, and the lease released (the run is
    over), so the message's redelivery after a short backoff can take it; the error itself is
    raised by the caller. False: the lease may still be held."""
    try:
        final = worker.final_records(message, owner, budget)
        final.note_error(one_line(f"{type(error).__name__}: {error}"))
    except Exception:  # the failure is what SQS must see, not this note's
        worker.job.logger.warning("could not note the failure on the partition record", exc_info=True)
        return False
    return True


def exhausted(
    worker: PartitionWorker, message: WorkMessage, owner: str, budget: Budget, metrics: EphemeralMetrics
) -> None:
    """The message's last receive failed: its partition named on the tick, which settles `failed`
    (when it cannot be, the tick reaper names it once the tick's bound has passed)."""
    try:
        if not worker.final_records(message, owner, budget).mark_exhausted():
            return  # the partition was done: its failure was the finisher's, which a redrive runs again
        worker.job.logger.error(
            "partition failed every receive; its message goes to the work DLQ",
            extra={"replay": f"clockless work redrive {message.job}"},
        )
        settle(worker, message, budget, metrics)
    except Exception:  # the failure is what SQS must see, not this record's
        worker.job.logger.warning("could not record the exhausted partition in the ledger", exc_info=True)


def lease_still_held(error: BaseException) -> None:
    """The failed run could not release its partition's lease: its message must wait the whole
    visibility timeout (longer than any lease), or its redelivery would find the lease held and end."""
    setattr(error, _LEASE_HELD, True)


def held_lease(error: BaseException) -> bool:
    return bool(getattr(error, _LEASE_HELD, False))


def hold_for_attempt(worker: PartitionWorker, receipt_handle: str, budget: Budget) -> int | None:
    """The message being run hidden until this attempt is surely over plus the margin, instead of
    the queue's visibility timeout: if the attempt dies, the message is tried again then. A
    throttle is waited out within the attempt's budget. The seconds it stays hidden; None: the
    visibility timeout's (best effort: the change was refused, or stayed throttled)."""
    delay = after_attempt_seconds(remaining_ms(budget.context) / 1000)
    queue = worker.work_queue()
    try:
        retry_throttled(
            lambda: queue.show_again(receipt_handle, delay),
            budget=budget.with_margin(HAND_ON_MARGIN_SECONDS),
            what="ChangeMessageVisibility",
        )
    except Exception:  # the run matters more: without the bound, a death waits the visibility timeout
        worker.job.logger.warning("could not bound the message's visibility to the attempt", exc_info=True)
        return None
    return delay


def come_back_soon(worker: PartitionWorker, record: SQSRecord, receives: int) -> int | None:
    """A message this worker failed is shown again after the backoff instead of the visibility
    timeout (the failure itself is what SQS sees). The seconds it stays hidden; None: the
    visibility timeout's (the change was refused)."""
    delay = redelivery_backoff_seconds(receives)
    try:
        worker.work_queue().show_again(record.receipt_handle, delay)
    except Exception:  # the failure is what SQS must see: the visibility timeout brings it back anyway
        worker.job.logger.warning("could not shorten the failed message's wait", exc_info=True)
        return None
    worker.job.logger.info("failed message comes back soon", extra={"receives": receives, "after_s": delay})
    return delay
