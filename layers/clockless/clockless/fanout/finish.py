"""Finishing a tick after a partition's last page (or a replay), or handing the finish on.

The finisher (clockless.fanout.finisher) settles the tick if every partition is done, and the
worker says so in its logs and metrics, then releases the tick buffered behind it
(clockless.fanout.buffer).

Any delivery may finish, any number of times: only the one whose update settles the tick logs it
and emits its metric (or the next, when that one died before it reported TickSucceeded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit

from clockless.fanout.buffer import release_buffered
from clockless.fanout.finisher import Finisher
from clockless.fanout.retry import continuation_delay
from clockless.job import METRIC_FAILED, METRIC_SUCCEEDED
from clockless.overlap import Overlap
from clockless.state import Outcome, Settle
from clockless.throttle import BudgetSpent

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.types import Counters
    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget


def finish_or_continue(
    worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics, outcome: Outcome
) -> Outcome:
    """The finisher, then `outcome`; when it stays throttled, a continuation runs it later (the
    partition is done)."""
    try:
        settle(worker, message, budget, metrics)
    except BudgetSpent as spent:
        worker.handoff(budget).send(message, continuation_delay(0))
        worker.job.logger.warning("the finisher stayed throttled; continuation sent", extra={"throttle": str(spent)})
        return Outcome.CONTINUED
    return outcome


def settle(worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics) -> None:
    """The tick settled if its last partition is done: logged, counted in TickSucceeded or
    TickFailed, and the tick buffered behind it released."""
    job = worker.job
    finisher = Finisher(worker.final_client(budget), worker.settings().ledger_table, tolerance=worker.tolerance)
    status, counters = finisher.finish(
        message.job, message.time_text, replay_hint=f"clockless work redrive {message.job}"
    )
    if status is Settle.SUCCEEDED:
        job.logger.info("tick succeeded: every item is accounted for", extra={"counters": _summary(counters)})
    elif status is Settle.UNREPORTED:
        job.logger.info("the tick had succeeded, but its TickSucceeded was never reported: reporting it")
    if status in (Settle.SUCCEEDED, Settle.UNREPORTED):
        _report_success(finisher, message, metrics)
    elif status is Settle.FAILED:
        metrics.add_metric(name=METRIC_FAILED, unit=MetricUnit.Count, value=1)
        job.logger.error(
            "tick failed: items failed; replay them after the fix",
            extra={"counters": _summary(counters), "replay": f"clockless work redrive {message.job}"},
        )
    if status is not Settle.NOT_COMPLETE and job.overlap is Overlap.BUFFER:
        release_buffered(worker, message, budget=budget)


def _report_success(finisher: Finisher, message: WorkMessage, metrics: EphemeralMetrics) -> None:
    """TickSucceeded out (Powertools prints the EMF line: it is in the logs, whatever this
    attempt does next), then the ledger told so (Finisher.reported)."""
    metrics.add_metric(name=METRIC_SUCCEEDED, unit=MetricUnit.Count, value=1)
    metrics.flush_metrics()
    finisher.reported(message.job, message.time_text)


def _summary(counters: Counters | None) -> dict[str, int] | None:
    return None if counters is None else counters.as_summary()
