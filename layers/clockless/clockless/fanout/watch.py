"""The watch over a message's late receives: a partition (or a buffered tick's start) whose message
dies still settles its tick.

A run that *raises* on its message's last receive names its partition on the tick itself
(`clockless.fanout.redelivery`). A message can also die where no code of the kit runs after: its
run dies (its Lambda timeout, a crash, running out of memory), or a receive never reaches the
handler (the function fails at init; Lambda's poller counts a receive for a batch it never
invokes). SQS then only moves it to the work DLQ. So on a message's **last two receives**
(`receives >= WORK_MAX_RECEIVES - 1`), before anything else, the dispatcher sends a **watch** to the
work queue, delayed until that attempt is surely over plus WATCH_MARGIN_SECONDS: the run's lease
owner, its message's SQS id and its receive count, the partition and hop (`send_watch`).

Whichever worker takes the watch reads the partition record and judges (`clockless.state.judge`, plain Python):

- the partition done, moved on to a later hop, or leased since by another message (a duplicate, a
  redrive): **ended**, only the finisher runs (a run that died after its done transaction left the
  tick, or its `TickSucceeded`, to it);
- a lease still live: **live**, the watch comes back at the lease's end;
- the watched receive was the last, and its run did not release the lease itself (it died holding
  it, or died or raised before taking it): **dead**, the partition is named on the tick;
- the watched receive was the one before the last: **wait** for the last, which may never reach a
  worker. The watch notes the lease owner it found and comes back (at most 900 s apart, SQS's
  DelaySeconds) until that receive's whole visibility timeout (`WORK_VISIBILITY_TIMEOUT_SECONDS`)
  after the backoff has passed: if no run took the lease meanwhile, and SQS shows no message
  waiting on the queue (a backlog could still hold it), the message is **dead** too. If the last
  receive did reach a worker, the watch judges its run as that receive's own watch does (which
  covers a last receive whose own watch could not be sent).

Dead: one transaction adds the partition to the tick entry's `partitions_exhausted`, conditioned on
the partition record as the watch read it (not done, its lease owner unchanged and not live), then
the finisher settles the tick `failed`, naming it. A redrive of the partition message later runs
it to its end, and its done transaction takes the partition out of the set, so the tick settles
again. Every outcome is safe to repeat: the watch is delivered at least once, like every message,
and the set and the finisher absorb duplicates.

A watch with no partition watches a buffered tick's `start` message (clockless.fanout.start_watch).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Final

from clockless.fanout.finish import settle
from clockless.fanout.messages import KIND_WATCH, WorkMessage
from clockless.fanout.queue import SQS_MAX_DELAY_SECONDS
from clockless.fanout.retry import (
    ATTEMPT_END_MARGIN_SECONDS,
    after_attempt_seconds,
    continuation_delay,
    redelivery_backoff_seconds,
)
from clockless.fanout.store import now_ms
from clockless.fanout.trust import UntrustedMessageError, reject_future_tick
from clockless.fanout.types import TickUnclaimed
from clockless.state import (
    Outcome,
    PartitionRecord,
    Verdict,
    judge,
)
from clockless.throttle import BudgetSpent, remaining_ms

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget

# How long after the attempt's end its watch arrives (and its message, bounded by the dispatcher,
# reappears): the first backoff of a failed message, so the lease has run out by then.
WATCH_MARGIN_SECONDS: Final = ATTEMPT_END_MARGIN_SECONDS
watch_delay_seconds = after_attempt_seconds
# SQS's counts of the messages on a queue lag by about a minute ("approximate"): a watch judging a
# message dead waits this much past the last moment it could have been hidden.
COUNT_LAG_SECONDS: Final = 60


def wait_for_last_receive_ms(receives: int, visibility_timeout_s: int) -> int:
    """How long after the watched attempt's end its message's last receive can still hide it: the
    backoff before it shows again, the visibility timeout of a receive no worker sees, the lag of
    SQS's counts."""
    seconds = redelivery_backoff_seconds(receives) + visibility_timeout_s + COUNT_LAG_SECONDS
    return 1000 * seconds


def watch_message(message: WorkMessage, owner: str, *, message_id: str, receives: int) -> WorkMessage:
    """The watch over the run `owner` of `message` (its SQS id and receive count)."""
    return dataclasses.replace(
        message,
        kind=KIND_WATCH,
        watched=owner,
        message_id=message_id,
        receives=receives,
        items=[],
        keys=[],
        failures=[],
        error="",
        seen_owner="",
        until_ms=0,
    )


def send_watch(
    worker: PartitionWorker, message: WorkMessage, owner: str, *, message_id: str, receives: int, budget: Budget
) -> bool:
    """The watch over this receive, delayed past the attempt's end; False when it could not be sent
    (best effort: the run goes on, and a run that raises still names its partition itself)."""
    delay = watch_delay_seconds(remaining_ms(budget.context) / 1000)
    watch = watch_message(message, owner, message_id=message_id, receives=receives)
    try:
        worker.handoff(budget).resend(watch, delay)
    except Exception:
        worker.job.logger.warning("could not send the watch over a late receive", exc_info=True)
        return False
    worker.job.logger.info("late receive watched: its tick settles even if it dies", extra={"after_s": delay})
    return True


def settle_watch(worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics) -> Outcome:
    """A partition's watch: judged against the partition record (`judge`) and acted on."""
    reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
    records = worker.final_records(message, message.watched, budget)
    settings = worker.settings()
    now = now_ms()
    record = records.read()
    verdict = judge(message, record, now=now, max_receives=settings.max_receives)
    if verdict is Verdict.DEAD and message.until_ms and worker.work_queue().waiting() > 0:
        verdict = Verdict.WAIT  # a backlog may still hold the message: look again after SQS's count lag
        message = dataclasses.replace(message, until_ms=now + 1000 * COUNT_LAG_SECONDS)
    if verdict is Verdict.LIVE:
        return _again(worker, message, budget, (record.lease_ends - now) / 1000 + WATCH_MARGIN_SECONDS)
    if verdict is Verdict.WAIT:
        if not message.until_ms:
            until = now + wait_for_last_receive_ms(message.receives, settings.visibility_timeout_s)
            message = dataclasses.replace(message, seen_owner=record.lease_owner, until_ms=until)
        worker.job.logger.info("waiting for a last receive no worker may see", extra={"until_ms": message.until_ms})
        _again(worker, message, budget, (message.until_ms - now) / 1000)
        return Outcome.WAITING
    if verdict is Verdict.DEAD and not _name_dead(worker, message, record, now, budget):
        return _again(worker, message, budget, WATCH_MARGIN_SECONDS)  # the record changed meanwhile: judge again
    if verdict is Verdict.DEAD:
        worker.job.logger.error(
            "partition's message died on its last receives (its worker died, or no worker saw it); "
            "the message goes to the work DLQ",
            extra={
                "watched": message.watched,
                "receives": message.receives,
                "replay": f"clockless work redrive {message.job}",
            },
        )
        return _finish(worker, message, budget, metrics, Outcome.SETTLED)
    worker.job.logger.info("the watched message ended by itself; settling the tick if it is complete")
    return _finish(worker, message, budget, metrics, Outcome.ENDED)


def _name_dead(
    worker: PartitionWorker, message: WorkMessage, record: PartitionRecord, now: int, budget: Budget
) -> bool:
    """The partition named exhausted, if its record is still as the watch read it (not done, the
    same lease owner, not live). False: it changed (the watch looks again)."""
    try:
        return worker.final_records(message, message.watched, budget).name_dead(record.lease_owner, now)
    except TickUnclaimed:
        why = "a watch over a tick no fan-out coordinator claimed"
        raise UntrustedMessageError(message.tick_key, message.partition, why) from None


def _again(worker: PartitionWorker, message: WorkMessage, budget: Budget, after_s: float) -> Outcome:
    """The watch sent again, `after_s` from now (at most SQS's 900 s: it then looks and goes on)."""
    delay = min(SQS_MAX_DELAY_SECONDS, max(1, math.ceil(after_s)))
    worker.handoff(budget).resend(message, delay)
    worker.job.logger.info("watching again", extra={"after_s": delay})
    return Outcome.STILL_LIVE


def _finish(
    worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics, outcome: Outcome
) -> Outcome:
    """The finisher; when it stays throttled, the watch itself comes back (the partition is named
    already, in a set), not a continuation of the partition (which would run it)."""
    try:
        settle(worker, message, budget, metrics)
    except BudgetSpent as spent:
        worker.handoff(budget).resend(message, continuation_delay(0))
        worker.job.logger.warning("the finisher stayed throttled; the watch comes back", extra={"throttle": str(spent)})
        return Outcome.THROTTLED
    return outcome
