"""The worker: one SQS message, one partition run (or one replay of failed items).

A partition run takes the partition's lease, then pages through it from the stored cursor, each
page applied by the batch writer and the cursor stored after it, until the partition is done
(then the finisher) or the time budget is spent (then the cursor is stored, the lease released
and a continuation sent). docs/fan-out.md has the whole design.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.config import Config

from clockless.fanout.buffer import release_buffered, start_buffered
from clockless.fanout.finisher import NOT_COMPLETE, UNREPORTED, Finisher
from clockless.fanout.messages import KIND_PARTITION, KIND_START, WorkMessage
from clockless.fanout.queue import split_items
from clockless.fanout.records import Counters, Lease, LeaseLost, PartitionRecords, now_ms, tick_key
from clockless.fanout.settings import WorkerSettings
from clockless.fanout.trust import (
    UntrustedMessageError,
    reject_future_tick,
    replayable_keys,
    tick_entry_check,
    why_not_claimed,
)
from clockless.fanout.writer import (
    DEFAULT_MAX_ATTEMPTS,
    RETRY_ERRORS,
    RETRY_REASONS,
    AccountingConflict,
    BatchWriter,
    Entry,
    WorkThrottled,
    backoff_seconds,
    client_request_token,
)
from clockless.job import METRIC_FAILED, METRIC_SUCCEEDED
from clockless.ledger import STATUS_FAILED, STATUS_SUCCEEDED
from clockless.overlap import Overlap

if TYPE_CHECKING:
    from clockless.fanout.coordinator import FanOut
    from clockless.fanout.work import PartitionWork

OUTCOME_DONE: Final = "done"
OUTCOME_CONTINUED: Final = "continued"
OUTCOME_HELD: Final = "held by a live worker"
OUTCOME_ALREADY_DONE: Final = "already done"
OUTCOME_REPLAYED: Final = "replayed"
METRIC_ITEMS_FAILED: Final = "WorkItemsFailed"
REPLAY_ATTEMPTS: Final = 3


class PartitionAccounting:
    """A partition run counts in its lane's record, and failed items on the partition record."""

    def __init__(self, records: PartitionRecords) -> None:
        self.records = records

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]:
        # Already-done items are counted with the cursor (PartitionRecords.store_cursor), not here.
        actions = []
        if applied:
            actions.append(self.records.lane_counter(lane, len(applied)))
        if failed:
            actions.append(self.records.failed_record(list(failed)))
        return actions


class ReplayAccounting:
    """A replay moves its items out of `failed_items`; items failing again stay there."""

    def __init__(self, records: PartitionRecords) -> None:
        self.records = records

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]:
        keys = [*applied, *already_done]
        return [self.records.replay_counter(keys, len(applied), len(already_done))] if keys else []


class PartitionWorker:
    def __init__(self, fan_out: FanOut, work: Callable[[], PartitionWork[Any]]) -> None:
        self.fan_out = fan_out
        self.job = fan_out.job
        self._work_factory = work
        self._work: PartitionWork[Any] | None = None
        self._settings: WorkerSettings | None = None
        self._clients: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        # Tests and the bench read what the last run did.
        self.last_counters = Counters()

    # ------------------------------------------------------------------------- collaborators
    def settings(self) -> WorkerSettings:
        if self._settings is None:
            self._settings = WorkerSettings.from_env()
        return self._settings

    def clients(self) -> tuple[Any, Any]:
        """(dynamodb, sqs), made on first use; the pool fits every lane's transaction at once."""
        with self._lock:
            if self._clients is None:
                import boto3  # noqa: PLC0415 - the handler's import stays free of clients

                pool = Config(max_pool_connections=max(10, self.settings().concurrency + 2))
                self._clients = (boto3.client("dynamodb", config=pool), boto3.client("sqs"))
            return self._clients

    def work(self) -> PartitionWork[Any]:
        with self._lock:
            if self._work is None:
                self._work = self._work_factory()
            return self._work

    # ----------------------------------------------------------------------------- handler
    def handle(self, event: Any, context: Any) -> dict[str, Any]:
        settings = self.settings()
        self.job.observability.invocation(context, metrics_namespace=settings.metrics_namespace)
        # A failed message is logged with the tick's keys (still on the logger) and its traceback.
        processor = BatchProcessor(event_type=EventType.SQS, logger=self.job.logger)  # type: ignore[arg-type]
        try:

            def record_handler(record: SQSRecord) -> str:
                return self.run(record.body, context)

            return dict(
                process_partial_response(
                    event=event, record_handler=record_handler, processor=processor, context=context
                )
            )
        finally:
            self.job.logger.thread_safe_clear_keys()

    def run(self, body: str, context: Any) -> str:
        """One message; an exception leaves it to SQS (redelivered, then the work DLQ)."""
        message = WorkMessage.parse(body, job=self.job.name, partitions=self.fan_out.partitions)
        self.job.logger.thread_safe_append_keys(
            correlation_id=message.tick_key,
            job=message.job,
            scheduled_time=message.time_text,
            trigger=message.trigger.value,
            partition=message.partition,
            kind=message.kind,
            hop=message.hop,
        )
        metrics = EphemeralMetrics(namespace=self.settings().metrics_namespace, service=self.job.name)
        metrics.add_dimension(name="job", value=self.job.name)
        metrics.add_dimension(name="trigger", value=message.trigger.value)
        try:
            if message.kind == KIND_PARTITION:
                return self._run_partition(message, context, metrics)
            if message.kind == KIND_START:
                return start_buffered(self.clients()[0], self.settings(), self.fan_out, message)
            return self._replay(message, metrics)
        except UntrustedMessageError as error:
            # Reported failed: SQS moves it to the work DLQ after maxReceiveCount (clockless.fanout.trust).
            self.job.logger.error("work message refused; nothing was written", extra={"reason": error.reason})
            raise
        finally:
            if metrics.metric_set:
                metrics.flush_metrics()

    # ------------------------------------------------------------------------ partition run
    def _records(self, message: WorkMessage, owner: str) -> PartitionRecords:
        settings = self.settings()
        return PartitionRecords(
            client=self.clients()[0],
            table=settings.ledger_table,
            job=message.job,
            scheduled_time=message.time_text,
            partition=message.partition,
            owner=owner,
            retention_seconds=settings.ledger_retention_seconds,
        )

    def _run_partition(self, message: WorkMessage, context: Any, metrics: EphemeralMetrics) -> str:
        settings = self.settings()
        owner = f"{getattr(context, 'aws_request_id', None) or 'local'}#{uuid.uuid4().hex[:12]}"
        records = self._records(message, owner)
        lease = self._acquire(records, message, context)
        if lease.done:
            self.job.logger.info("partition already done; settling the tick if it is complete")
            self._finish(message, metrics)
            return OUTCOME_ALREADY_DONE
        if not lease.acquired:
            self.job.logger.info("partition held by a live worker", extra={"lease_until_ms": lease.holder_until_ms})
            return OUTCOME_HELD
        work = self.work()
        writer = BatchWriter(
            self.clients()[0],
            PartitionAccounting(records),
            on_failed=self._dead_letters(message, work),
            concurrency=settings.concurrency,
        )
        counters = Counters()
        cursor = lease.cursor
        started = time.monotonic()
        pages = 0
        try:
            while True:
                page = work.read(message.partition, message.params, cursor, settings.page_size)
                pages += 1
                entries = [
                    Entry(key, work.writes(item, message.params, message.tick_key), item)
                    for item in page.items
                    if (key := work.item_key(item)) not in lease.failed_items
                ]
                found = writer.apply(entries)
                counters.add(found)
                if page.cursor is None:
                    break
                cursor = page.cursor
                # After a page, so every run makes progress even with a budget set too large.
                if _remaining_ms(context) < settings.time_budget_ms:
                    # the cursor, the page's already-done count and the lease released, in one write
                    records.hand_on(cursor, already_done=found.already_done)
                    self.clients()[1].send_message(
                        QueueUrl=settings.work_queue_url, MessageBody=message.continuation().body()
                    )
                    self._log_run("time budget spent; continuation sent", counters, pages, started, writer)
                    _count_failed(metrics, counters)
                    return OUTCOME_CONTINUED
                records.store_cursor(cursor, already_done=found.already_done)
            self._mark_done(records, already_done=found.already_done)
        except LeaseLost:
            self.job.logger.warning("the partition's lease was taken over; the new holder goes on")
            return OUTCOME_HELD
        finally:
            self.last_counters = counters
        self._log_run("partition done", counters, pages, started, writer)
        _count_failed(metrics, counters)
        self._finish(message, metrics)
        return OUTCOME_DONE

    def _acquire(self, records: PartitionRecords, message: WorkMessage, context: Any) -> Lease:
        """The partition's lease, for a message the clock and the ledger back (or
        UntrustedMessageError, nothing written): clockless.fanout.trust."""
        reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
        # The lease lives as long as this attempt can: a dead worker's lease has run out by the
        # time SQS shows its message again (visibility timeout >= 6 x the worker's timeout).
        lease_until_ms = now_ms() + _remaining_ms(context)
        if message.hop > 0:
            # A continuation: its partition's record exists (the run before handed it on), and
            # was made under the ledger's check.
            lease = records.acquire(lease_until_ms=lease_until_ms, hop=message.hop, existing_only=True)
            if lease.missing:
                never = f"a continuation (hop {message.hop}) of a partition never started"
                raise UntrustedMessageError(message.tick_key, message.partition, never)
            return lease
        total = len(self.fan_out.partitions)
        check = tick_entry_check(records.table, tick_key(message.job, message.time_text), total)
        lease = records.acquire_first(lease_until_ms=lease_until_ms, hop=message.hop, tick_check=check)
        if lease.untrusted is not None:
            raise UntrustedMessageError(message.tick_key, message.partition, why_not_claimed(lease.untrusted, total))
        return lease

    def _mark_done(self, records: PartitionRecords, *, already_done: int) -> None:
        """Partition done + the tick's partitions_done, once: resent on conflict or throttling
        (the tick entry is every partition's), answered from its token if it was applied."""
        dynamodb = self.clients()[0]
        transact_items = records.done_transaction(already_done=already_done)
        token = client_request_token(transact_items)
        for attempt in range(DEFAULT_MAX_ATTEMPTS):
            try:
                dynamodb.transact_write_items(TransactItems=transact_items, ClientRequestToken=token)
                return
            except dynamodb.exceptions.TransactionCanceledException as error:
                codes = [str((r or {}).get("Code") or "None") for r in error.response.get("CancellationReasons") or []]
                if codes and codes[0] == "ConditionalCheckFailed":
                    raise LeaseLost(f"partition {records.partition} is not this worker's to finish: {codes}") from None
                if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                    raise RuntimeError(
                        f"tick {records.job}@{records.scheduled_time} has no partitions_total in the ledger: "
                        "its coordinator did not claim it through the kit"
                    ) from None
                if not any(code in RETRY_REASONS for code in codes):
                    raise
            except dynamodb.exceptions.ClientError as error:
                if error.response.get("Error", {}).get("Code") not in RETRY_ERRORS:
                    raise
            time.sleep(backoff_seconds(attempt))
        raise WorkThrottled(f"marking partition {records.partition} done stayed throttled or in conflict")

    def _finish(self, message: WorkMessage, metrics: EphemeralMetrics) -> None:
        finisher = Finisher(self.clients()[0], self.settings().ledger_table)
        status, counters = finisher.finish(
            message.job, message.time_text, replay_hint=f"clockless work redrive {message.job}"
        )
        if status == STATUS_SUCCEEDED:
            self.job.logger.info("tick succeeded: every item is accounted for", extra={"counters": _summary(counters)})
        elif status == UNREPORTED:
            self.job.logger.info("the tick had succeeded, but its TickSucceeded was never reported: reporting it")
        if status in (STATUS_SUCCEEDED, UNREPORTED):
            self._report_success(finisher, message, metrics)
        elif status == STATUS_FAILED:
            metrics.add_metric(name=METRIC_FAILED, unit=MetricUnit.Count, value=1)
            self.job.logger.error("tick failed: items failed; replay them", extra={"counters": _summary(counters)})
        if status != NOT_COMPLETE and self.job.overlap is Overlap.BUFFER:
            release_buffered(*self.clients(), self.settings(), self.job, message)

    @staticmethod
    def _report_success(finisher: Finisher, message: WorkMessage, metrics: EphemeralMetrics) -> None:
        """TickSucceeded out (Powertools prints the EMF line: it is in the logs, whatever this
        attempt does next), then the ledger told so (Finisher.reported)."""
        metrics.add_metric(name=METRIC_SUCCEEDED, unit=MetricUnit.Count, value=1)
        metrics.flush_metrics()
        finisher.reported(message.job, message.time_text)

    def _dead_letters(self, message: WorkMessage, work: PartitionWork[Any]) -> Callable[[list[Entry], str], None]:
        settings = self.settings()

        def send(entries: list[Entry], reason: str) -> None:
            encoded = [work.encode(entry.item) for entry in entries]
            envelope = len(message.failed_items([], reason).body().encode("utf-8"))
            for group in split_items(encoded, envelope):
                self.clients()[1].send_message(
                    QueueUrl=settings.dead_letter_queue_url, MessageBody=message.failed_items(group, reason).body()
                )
            # Lanes log from their own threads, which do not carry the run's log keys: name the tick.
            self.job.logger.error(
                "items failed; sent to the work DLQ",
                extra={
                    "correlation_id": message.tick_key,
                    "partition": message.partition,
                    "items": [e.key for e in entries],
                    "reason": reason,
                },
            )

        return send

    def _log_run(self, what: str, counters: Counters, pages: int, started: float, writer: BatchWriter) -> None:
        self.job.logger.info(
            what,
            extra={
                "counters": counters.as_summary(),
                "pages": pages,
                "transactions": writer.transactions,
                "duration_ms": round((time.monotonic() - started) * 1000),
            },
        )

    # ------------------------------------------------------------------------------ replay
    def _replay(self, message: WorkMessage, metrics: EphemeralMetrics) -> str:
        """Failed items moved back from the DLQ: applied once, counted on the partition record
        only while they are still listed failed (a duplicate replay changes nothing)."""
        reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
        work = self.work()
        records = self._records(message, owner=f"replay#{uuid.uuid4().hex[:12]}")
        items = [work.decode(data) for data in message.items]
        counters = Counters()
        for _ in range(REPLAY_ATTEMPTS):
            failed_keys = replayable_keys(records, message, [work.item_key(item) for item in items])
            entries = [
                Entry(key, work.writes(item, message.params, message.tick_key), item)
                for item in items
                if (key := work.item_key(item)) in failed_keys
            ]
            if not entries:
                break
            writer = BatchWriter(
                self.clients()[0], ReplayAccounting(records), on_failed=self._dead_letters(message, work), concurrency=1
            )
            try:
                counters.add(writer.apply(entries))
                break
            except AccountingConflict:
                continue  # a concurrent replay took some of them: read the set again
        else:
            raise AccountingConflict(f"replaying {len(items)} item(s) met concurrent replays {REPLAY_ATTEMPTS} times")
        self.last_counters = counters
        self.job.logger.info("failed items replayed", extra={"counters": counters.as_summary()})
        self._finish(message, metrics)
        return OUTCOME_REPLAYED


def _count_failed(metrics: EphemeralMetrics, counters: Counters) -> None:
    if counters.failed:
        metrics.add_metric(name=METRIC_ITEMS_FAILED, unit=MetricUnit.Count, value=counters.failed)


def _remaining_ms(context: Any) -> int:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return int(remaining()) if callable(remaining) else 15 * 60 * 1000


def _summary(counters: Counters | None) -> dict[str, int] | None:
    return None if counters is None else counters.as_summary()
