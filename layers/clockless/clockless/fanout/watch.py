"""The watch over a partition message's last receive: a worker that dies there still settles its tick.

A run that *raises* on its message's last receive names its partition on the tick itself
(`clockless.fanout.redelivery`). One that dies (its Lambda timeout, a crash, running out of memory)
runs nothing more, and SQS only moves its message to the work DLQ. So a run that takes the lease
on the last receive (`receives >= WORK_MAX_RECEIVES`), before it reads anything:

1. bounds its message's visibility to what the attempt can live plus WATCH_MARGIN_SECONDS
   (`ChangeMessageVisibility`), so a dead attempt's message reaches the work DLQ then, not after
   the queue's 1,800 s visibility timeout, and `clockless work redrive` finds it there;
2. sends a **watch** message to its own work queue, delayed by the same: the lease owner it
   watches, and the partition's tick.

Whichever worker takes the watch settles it with one transaction: the partition named in the tick
entry's `partitions_exhausted` only while the partition is not done, its lease still the watched
run's, **held** (a run that ended by itself released it: handed on, or raised after naming its
partition) and **expired** (the attempt is over). Then the finisher settles the tick `failed`,
naming the partition, within the worker's timeout plus the margin of its last receive. A watch
that finds the lease still live (it came early) is sent again, delayed to the lease's end; one
that finds the partition done, released or taken by a later run only runs the finisher (a run
that died after its done transaction left the tick to it). Every outcome is
safe to repeat: the watch is delivered at least once, like every message, and the set and the
finisher absorb duplicates. A redrive of the partition message later runs it to its end, and its
done transaction takes the partition out of the set, so the tick settles again (`succeeded`).

Not covered: a last receive that never reaches the handler (the function fails at init, or the
poller counts a receive for an invocation that never ran), and a death between taking the lease and
sending the watch. Their messages still reach the alarmed work DLQ (`clockless status` shows the tick
failing, its partition dead-lettered), and a redrive settles the tick.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Final

from clockless.fanout.finish import settle
from clockless.fanout.keys import STATUS_DONE
from clockless.fanout.messages import KIND_WATCH, WorkMessage
from clockless.fanout.queue import SQS_MAX_DELAY_SECONDS
from clockless.fanout.records import now_ms
from clockless.fanout.retry import FIRST_BACKOFF_SECONDS, HAND_ON_MARGIN_SECONDS, continuation_delay
from clockless.fanout.trust import UntrustedMessageError, reject_future_tick
from clockless.throttle import BudgetSpent, cancellation_reasons, remaining_ms, retry_throttled

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget

# How long after the attempt's end its message reappears (then moves to the DLQ) and its watch
# arrives: the first backoff of a failed message, so the lease has run out by then.
WATCH_MARGIN_SECONDS: Final = FIRST_BACKOFF_SECONDS
OUTCOME_SETTLED: Final = "partition named on its tick: its worker died on the last receive"
OUTCOME_ENDED: Final = "the watched run ended by itself"
OUTCOME_STILL_LIVE: Final = "the watched run may still live: watching again"
OUTCOME_THROTTLED: Final = "throttled past the attempt's budget: the watch sent again"
# The settle transaction's condition on the partition record, beside "not done".
_DIED_HOLDING_THE_LEASE: Final = "lease_owner = :watched AND lease_until > :zero AND lease_until < :now"


def watch_delay_seconds(remaining: float) -> int:
    """Seconds from now until an attempt with `remaining` seconds left is surely over, plus the margin."""
    return math.ceil(max(0.0, remaining)) + WATCH_MARGIN_SECONDS


def watch_message(message: WorkMessage, owner: str) -> WorkMessage:
    """The watch over the run `owner` of `message`'s partition."""
    return dataclasses.replace(message, kind=KIND_WATCH, watched=owner, items=[], keys=[], failures=[], error="")


def watch_last_receive(
    worker: PartitionWorker, message: WorkMessage, owner: str, receipt_handle: str | None, budget: Budget
) -> None:
    """On the last receive, with the lease taken: the message held only until this attempt is over
    (plus the margin), and the watch sent with that delay. A watch that cannot be sent raises (the
    run fails, and names its partition on the tick as any run failing its last receive does); the
    visibility is best effort (without it the message reaches the DLQ after the visibility timeout,
    and the watch settles the tick all the same)."""
    delay = watch_delay_seconds(remaining_ms(budget.context) / 1000)
    if receipt_handle is not None:
        queue = worker.work_queue()
        try:
            retry_throttled(
                lambda: queue.show_again(receipt_handle, delay),
                budget=budget.with_margin(HAND_ON_MARGIN_SECONDS),
                what="ChangeMessageVisibility",
            )
        except Exception:
            worker.job.logger.warning("could not bound the last receive's visibility", exc_info=True)
    worker.handoff(budget).resend(watch_message(message, owner), delay)
    worker.job.logger.info("last receive watched: its tick settles even if the attempt dies", extra={"after_s": delay})


def settle_watch(worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics) -> str:
    """A watch message: the watched run's partition named on its tick if that run died holding the
    lease, then the finisher; watched again if the run may still live; otherwise only the finisher
    (the run may have died after its partition's done transaction, on a receive nothing comes after)."""
    reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
    records = worker.final_records(message, message.watched, budget)
    now = now_ms()
    actions = records.exhausted_actions(
        unless=_DIED_HOLDING_THE_LEASE,
        values={":watched": {"S": message.watched}, ":zero": {"N": "0"}, ":now": {"N": str(now)}},
    )
    try:
        records.client.transact_write_items(TransactItems=actions)
    except records.client.exceptions.TransactionCanceledException as error:
        partition, tick = cancellation_reasons(error, 2)[:2]
        if partition.get("Code") == "ConditionalCheckFailed":
            return _not_settled(worker, message, budget, metrics, record=dict(partition.get("Item") or {}), now=now)
        if tick.get("Code") == "ConditionalCheckFailed":
            why = "a watch over a tick no fan-out coordinator claimed"
            raise UntrustedMessageError(message.tick_key, message.partition, why) from None
        raise
    worker.job.logger.error(
        "partition's worker died on its message's last receive; the message goes to the work DLQ",
        extra={"watched": message.watched, "replay": f"clockless work redrive {message.job}"},
    )
    return _finish(worker, message, budget, metrics, OUTCOME_SETTLED)


def _not_settled(
    worker: PartitionWorker,
    message: WorkMessage,
    budget: Budget,
    metrics: EphemeralMetrics,
    *,
    record: dict[str, Any],
    now: int,
) -> str:
    owner = (record.get("lease_owner") or {}).get("S")
    until = int((record.get("lease_until") or {}).get("N") or 0)
    done = (record.get("status") or {}).get("S") == STATUS_DONE
    if owner == message.watched and until >= now and not done:
        delay = min(SQS_MAX_DELAY_SECONDS, watch_delay_seconds((until - now) / 1000))
        worker.handoff(budget).resend(message, delay)
        worker.job.logger.info("the watched run's lease is still live; watching again", extra={"after_s": delay})
        return OUTCOME_STILL_LIVE
    # It ended by itself, or died after its partition's done transaction: the finisher (a read
    # when there is nothing to do) settles the tick, or reports a TickSucceeded left unsaid.
    worker.job.logger.info("the watched run ended by itself; settling the tick if it is complete")
    return _finish(worker, message, budget, metrics, OUTCOME_ENDED)


def _finish(
    worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics, outcome: str
) -> str:
    """The finisher; when it stays throttled, the watch itself comes back (the partition is named
    already, in a set), not a continuation of the partition (which would run it)."""
    try:
        settle(worker, message, budget, metrics)
    except BudgetSpent as spent:
        worker.handoff(budget).resend(message, continuation_delay(0))
        worker.job.logger.warning("the finisher stayed throttled; the watch comes back", extra={"throttle": str(spent)})
        return OUTCOME_THROTTLED
    return outcome
