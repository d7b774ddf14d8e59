"""The watch over a buffered tick's `start` message: a start that dies still settles its tick.

A start message's run claims the buffered tick (`buffered` becomes `started`) and fans it out
(clockless.fanout.buffer). If the message dies on its last receives (its run dies or raises, or a
receive never reaches the handler), SQS moves it to the work DLQ and the tick would stay `buffered`
(or `started` with no partition sent) for ever. So on the start message's last two receives the
dispatcher sends a watch with no partition, as for a partition (clockless.fanout.watch), and the
watch reads the tick's ledger entry (`clockless.state.judge_start`, plain Python):

- still `buffered` after the last receive (or, watched from the receive before it, once that
  receive's visibility timeout has passed and SQS shows no backlog): **dead**; the tick is settled
  `failed` ("its start message failed every receive") and the tick buffered behind it is released;
  a redrive of the start message from the work DLQ starts it after all;
- `started` by this start, not settled, after the last receive: the start is **done again** (the
  job's function sends the partitions once more; a partition sent twice is a duplicate the workers
  recognise), since a run that died between its claim and its sends left none;
- anything else (settled, started by the last receive the watch waited for, or another tick's
  doing): **ended**, nothing to do.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from typing import TYPE_CHECKING, Final

from aws_lambda_powertools.metrics import MetricUnit

from clockless.fanout.buffer import release_buffered, start_buffered
from clockless.fanout.messages import KIND_START, WorkMessage
from clockless.fanout.queue import SQS_MAX_DELAY_SECONDS
from clockless.fanout.store import TickStore, now_ms
from clockless.fanout.trust import reject_future_tick
from clockless.fanout.watch import COUNT_LAG_SECONDS, wait_for_last_receive_ms
from clockless.job import METRIC_FAILED
from clockless.state import Outcome, StartVerdict, TickStatus, judge_start

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget

# `seen_owner` of a start's watch that waits: the tick was still buffered when it began to.
SEEN_BUFFERED: Final = TickStatus.BUFFERED.value


def settle_start_watch(
    worker: PartitionWorker, watch: WorkMessage, budget: Budget, metrics: EphemeralMetrics
) -> Outcome:
    """A start's watch: judged against the tick's ledger entry (`judge_start`) and acted on."""
    reject_future_tick(watch.tick_key, "-", watch.scheduled_time)
    settings = worker.settings()
    tick = TickStore(worker.clients()[0], settings.ledger_table, watch.job, watch.time_text)
    entry = tick.read()
    now = now_ms()
    verdict = judge_start(watch, entry, now=now, max_receives=settings.max_receives)
    if verdict is StartVerdict.DEAD and watch.until_ms and worker.work_queue().waiting() > 0:
        verdict = StartVerdict.WAIT  # a backlog may still hold the start: look again after SQS's count lag
        watch = dataclasses.replace(watch, until_ms=now + 1000 * COUNT_LAG_SECONDS)
    if verdict is StartVerdict.WAIT:
        if not watch.until_ms:
            until = now + wait_for_last_receive_ms(watch.receives, settings.visibility_timeout_s)
            watch = dataclasses.replace(watch, seen_owner=SEEN_BUFFERED, until_ms=until)
        delay = min(SQS_MAX_DELAY_SECONDS, max(1, math.ceil((watch.until_ms - now) / 1000)))
        worker.handoff(budget).resend(watch, delay)
        worker.job.logger.info("waiting for a start's last receive no worker may see", extra={"after_s": delay})
        return Outcome.START_WAITING
    start = dataclasses.replace(watch, kind=KIND_START, partition="", watched="", message_id="", receives=0)
    if verdict is StartVerdict.AGAIN:
        worker.job.logger.warning("a buffered tick's start died on its last receive: its partitions are sent again")
        start_buffered(worker, start)
        return Outcome.STARTED_AGAIN
    if verdict is StartVerdict.ENDED:
        return Outcome.START_ENDED
    if fail_buffered(tick, watch):
        metrics.add_metric(name=METRIC_FAILED, unit=MetricUnit.Count, value=1)
        worker.job.logger.error(
            "buffered tick failed: its start message died on its last receives; it waits in the work DLQ",
            extra={"replay": f"clockless work redrive {watch.job}"},
        )
    # Every delivery that finds it failed releases the tick behind it (the start itself happens once).
    release_buffered(worker, start, budget=budget)
    return Outcome.START_FAILED


def fail_buffered(tick: TickStore, watch: WorkMessage) -> bool:
    """The buffered tick settled `failed`, only while it is still buffered behind `after`
    (`start_failed` lets a redriven start message start it after all: clockless.overlap). True
    for the watch that failed it (also when its answer was lost and the update resent), so it
    alone says so."""
    after = str(watch.params.get("after", ""))
    error = f"its start message failed every receive: start it again: clockless work redrive {watch.job}"
    # `finished_by`: a resend of this very update after a lost answer finds its own mark.
    return tick.fail_start(after=after, error=error, mark=uuid.uuid4().hex)
