"""The worker's Lambda handler: each SQS message of a batch parsed, then routed by its kind.

- `partition`: run (or go on with) one partition: clockless.fanout.partition;
- `items`: replay failed items moved back from the work DLQ: clockless.fanout.replay;
- `start`: start a tick the overlap policy buffered: clockless.fanout.buffer;
- a `watch` (a kind earlier releases sent) is acknowledged with a log line, nothing done.

Before a message runs, it is hidden only until the attempt is surely over (`hold_for_attempt`), so
a run that dies is tried again seconds after its attempt's end, not after the queue's visibility
timeout. A message is reported failed when its run raises: SQS shows it again (sooner still, when
the run could release its lease: clockless.fanout.redelivery) and after maxReceiveCount moves it
to the work DLQ. A tick whose message dies there, or never reaches a worker, is settled by the tick
reaper once its bound has passed (clockless.reaper). docs/fan-out.md has the whole design.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, assert_never

from aws_lambda_powertools.metrics import EphemeralMetrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from clockless.fanout.buffer import start_buffered
from clockless.fanout.messages import MessageKind, RetiredMessageError, UnreadableMessageError, WorkMessage
from clockless.fanout.partition import lease_owner, run_partition
from clockless.fanout.redelivery import come_back_soon, held_lease, hold_for_attempt
from clockless.fanout.replay import replay
from clockless.fanout.trust import UntrustedMessageError
from clockless.fanout.unreadable import refused, unreadable
from clockless.fanout.worker import PartitionWorker
from clockless.state import Outcome
from clockless.throttle import Budget

if TYPE_CHECKING:
    from clockless.fanout.work import PartitionWork
    from clockless.items import Tolerance
    from clockless.job import ScheduledJob

LambdaHandler = Callable[[Any, Any], dict[str, Any]]


def worker_handler(
    job: ScheduledJob, partitions: Sequence[str], work: Callable[[], PartitionWork[Any]], *, tolerance: Tolerance
) -> LambdaHandler:
    """The SQS-fed worker's Lambda handler, with the warm worker behind it as `clockless_runner`
    (tools and tests give it their clock)."""
    runner = PartitionWorker(job, partitions, work, tolerance=tolerance)

    def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
        return handle(runner, event, context)

    lambda_handler.clockless_runner = runner  # type: ignore[attr-defined]
    return lambda_handler


def handle(worker: PartitionWorker, event: Any, context: Any) -> dict[str, Any]:
    """One SQS batch: each message dispatched on its own, the failed ones reported to SQS."""
    settings = worker.settings()
    worker.job.observability.invocation(context, metrics_namespace=settings.metrics_namespace)
    # A failed message is logged with the tick's keys (still on the logger) and its traceback.
    processor = BatchProcessor(event_type=EventType.SQS, logger=worker.job.logger)  # type: ignore[arg-type]
    try:

        def record_handler(record: SQSRecord) -> str:
            receives = int(record.attributes.approximate_receive_count or 1)
            try:
                return dispatch(
                    worker,
                    record.body,
                    context,
                    receives=receives,
                    receipt_handle=record.receipt_handle,
                )
            except Exception as error:
                if not held_lease(error):
                    come_back_soon(worker, record, receives)
                raise

        return dict(
            process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
        )
    finally:
        worker.job.logger.thread_safe_clear_keys()


def dispatch(
    worker: PartitionWorker,
    body: str,
    context: Any,
    *,
    receives: int = 1,
    receipt_handle: str | None = None,
) -> Outcome:
    """One message, routed by its kind; its outcome. An exception leaves it to SQS (redelivered,
    then the work DLQ). `receives`: its ApproximateReceiveCount; `receipt_handle`: its handle, for
    its visibility."""
    job = worker.job
    try:
        message = WorkMessage.parse(body, job=job.name, partitions=worker.partitions, versions=worker.versions)
    except RetiredMessageError as retired:
        # Queued by the release before this one (a watch): reported processed, so it neither
        # fails the batch nor waits in the work DLQ; the tick reaper settles what it watched.
        job.logger.warning("work message of a retired kind acknowledged; nothing done", extra={"kind": retired.kind})
        return Outcome.RETIRED
    except UnreadableMessageError as error:
        unreadable(worker, error, context, receives=receives)
        raise
    job.logger.thread_safe_append_keys(
        correlation_id=message.tick_key,
        job=message.job,
        scheduled_time=message.time_text,
        trigger=message.trigger.value,
        partition=message.partition,
        kind=message.kind,
        hop=message.hop,
    )
    metrics = EphemeralMetrics(namespace=worker.settings().metrics_namespace, service=job.name)
    metrics.add_dimension(name="job", value=job.name)
    metrics.add_dimension(name="trigger", value=message.trigger.value)
    budget = Budget(context, worker.settings().time_budget_ms / 1000, worker.clock)
    owner = lease_owner(context)
    try:
        if receipt_handle is not None:
            hold_for_attempt(worker, receipt_handle, budget)
        match message.kind:
            case MessageKind.PARTITION:
                return run_partition(worker, message, budget, metrics, receives=receives)
            case MessageKind.START:
                return start_buffered(worker, message)
            case MessageKind.ITEMS:
                return replay(worker, message, budget, metrics)
            case unknown:  # mypy fails here when a kind has no case
                assert_never(unknown)
    except UntrustedMessageError as error:
        # Reported failed: SQS moves it to the work DLQ after maxReceiveCount (clockless.fanout.trust).
        job.logger.error("work message refused; nothing was written", extra={"reason": error.reason})
        refused(worker, message, error, owner=owner, budget=budget, metrics=metrics, receives=receives)
        raise
    finally:
        if metrics.metric_set:
            metrics.flush_metrics()
