"""tick-reaper: the tick's handler. Each fanned-out tick past its bound and not settled is settled
`failed`, naming its partitions not done (clockless.reaper has why and how)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from clockless import JobRun, ScheduledJob
from clockless.config import CLIENT_ENVIRONMENT, PerEnvironment, metrics_namespace
from clockless.job import METRIC_FAILED, METRIC_SUCCEEDED
from clockless.reaper import SETTLED, Reaped, StuckTicks, reap
from clockless.state import Settle
from tick_reaper.settings import TickReaperSettings

JOB_NAME = "tick-reaper"
job = ScheduledJob(JOB_NAME)
_settings = PerEnvironment(TickReaperSettings.from_env)


def _client() -> Any:
    import boto3  # noqa: PLC0415 - the handler's import stays free of clients

    return boto3.client("dynamodb")


_dynamodb = PerEnvironment(_client, CLIENT_ENVIRONMENT)


@job.handler
def lambda_handler(run: JobRun) -> Mapping[str, Any]:
    settings = _settings.get()
    store = StuckTicks(_dynamodb.get(), settings.ledger_table)
    # As of the tick's scheduled time, never the wall clock: a late delivery of a reaper tick
    # settles no tick its own tick would not have (rule no-wall-clock).
    reaped = reap(store, settings.jobs, now=run.tick.scheduled_time, lookback=settings.lookback)
    for tick in reaped:
        if tick.outcome == SETTLED:
            _report(store, tick)
    settled = [f"{tick.job}@{tick.scheduled_time}" for tick in reaped if tick.outcome == SETTLED]
    return {"settled": len(settled), "changed": len(reaped) - len(settled), "ticks": settled}


def _report(store: StuckTicks, tick: Reaped) -> None:
    """The settled tick's log line, and its TickFailed (or, for a complete tick its finisher
    settled here, TickSucceeded, then the ledger told) under its own job's dimensions, as its
    last partition's delivery would have counted it."""
    succeeded = tick.status in (Settle.SUCCEEDED, Settle.UNREPORTED)
    extra = {
        "reaped_job": tick.job,
        "reaped_scheduled_time": tick.scheduled_time,
        "was": tick.was,
        "partitions_not_done": list(tick.not_done),
        "replay": f"clockless work redrive {tick.job}",
    }
    if succeeded:
        job.logger.info("complete tick settled: its finisher never ran after its last partition", extra=extra)
    else:
        job.logger.error("tick settled failed: not done by its bound", extra=extra)
    metrics = EphemeralMetrics(namespace=metrics_namespace(), service=tick.job)
    metrics.add_dimension(name="job", value=tick.job)
    metrics.add_dimension(name="trigger", value=tick.trigger)
    metrics.add_metric(name=METRIC_SUCCEEDED if succeeded else METRIC_FAILED, unit=MetricUnit.Count, value=1)
    metrics.flush_metrics()
    if succeeded:
        store.reported(tick)
