"""`FanOut`: a job's ticks split into partitions, handed out to the workers of its work queue.

Declared once at module level next to the job (no AWS is touched until a tick comes):

    job = ScheduledJob("window-generation")
    work = FanOut(job, partitions=[str(shard) for shard in range(16)])

    @job.handler
    def lambda_handler(run: JobRun) -> Mapping[str, Any]:
        return work.start(run, params={"business_date": "2026-12-01"})

    # worker.py
    lambda_handler = work.worker(lambda: WindowPartitionWork(store()))
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from clockless.config import CLIENT_ENVIRONMENT, PerEnvironment
from clockless.errors import ArgumentError, DeclarationError
from clockless.fanout.messages import KIND_PARTITION, WorkMessage
from clockless.fanout.queue import WorkQueue
from clockless.fanout.retry import SEND_MARGIN_SECONDS
from clockless.fanout.settings import CoordinatorSettings
from clockless.items import parse_tolerance
from clockless.tick import format_scheduled_time

if TYPE_CHECKING:
    from clockless.fanout.dispatcher import LambdaHandler
    from clockless.fanout.work import PartitionWork
    from clockless.job import ScheduledJob
    from clockless.run import JobRun


class FanOut:
    def __init__(
        self, job: ScheduledJob, *, partitions: Sequence[str], tolerated_failures: int | str | None = None
    ) -> None:
        partitions = tuple(partitions)
        if not partitions:
            raise DeclarationError(f"FanOut of {job.name!r}: partitions must name at least one partition")
        if any(not isinstance(p, str) or not p or "#" in p for p in partitions):
            raise DeclarationError(f"FanOut of {job.name!r}: partitions must be non-empty strings without '#'")
        if len(set(partitions)) != len(partitions):
            raise DeclarationError(f"FanOut of {job.name!r}: partitions must be unique, got {list(partitions)}")
        self.job = job
        self.partitions = partitions
        # How many failed items a tick may have and still succeed (clockless.items): none by default.
        self.tolerance = parse_tolerance(tolerated_failures, job=job.name)
        job.declare_fan_out(len(partitions))
        self._sqs = PerEnvironment(_sqs_client, CLIENT_ENVIRONMENT)

    def sqs(self) -> Any:
        return self._sqs.get()

    def start(self, run: JobRun, params: Mapping[str, Any]) -> dict[str, Any]:
        """Hand the tick's partitions to the workers: one message each, 10 per request. The summary
        the coordinator returns (the tick's own summary comes from the finisher)."""
        params = dict(params)
        try:
            json.dumps(params)
        except (TypeError, ValueError) as error:
            raise ArgumentError(f"FanOut.start of {self.job.name!r}: params must be JSON: {error}") from None
        if "fan_out" in params:
            raise ArgumentError(f"FanOut.start of {self.job.name!r}: params may not use the key 'fan_out'")
        tick = run.tick
        bodies = [
            WorkMessage(KIND_PARTITION, tick.job, tick.scheduled_time, tick.trigger, partition, params).body()
            for partition in self.partitions
        ]
        queue = WorkQueue(self.sqs(), CoordinatorSettings.from_env().work_queue_url)
        # Throttled sends are waited out while the attempt has time, less what its completion needs.
        budget = None if run.budget is None else run.budget.with_margin(SEND_MARGIN_SECONDS)
        queue.send_all(bodies, budget=budget)
        self.job.logger.info(
            "tick fanned out",
            extra={"partitions": len(bodies), "scheduled_time": format_scheduled_time(tick.scheduled_time)},
        )
        return {"fan_out": {"partitions": len(bodies)}, **params}

    def worker(self, work: Callable[[], PartitionWork[Any]]) -> LambdaHandler:
        """The SQS-fed worker's Lambda handler; `work` builds the job's PartitionWork on first use."""
        from clockless.fanout.dispatcher import worker_handler  # noqa: PLC0415 - coordinators never load it

        lambda_handler = worker_handler(self.job, self.partitions, work, tolerance=self.tolerance)
        lambda_handler.clockless_worker = self  # type: ignore[attr-defined]
        return lambda_handler


def _sqs_client() -> Any:
    import boto3  # noqa: PLC0415 - only a tick pays for a client, not the import of a handler

    return boto3.client("sqs")
