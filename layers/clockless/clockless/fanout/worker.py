"""The worker: one SQS message, one partition run (or one replay of failed items).

A partition run takes the partition's lease, then pages through it from the stored cursor, each
page applied by the batch writer and the cursor stored after it, until the partition is done
(then the finisher) or the time budget is spent (then the cursor is stored, the lease released
and a continuation sent). Throttling is waited out within the same budget and, when the budget
is spent, handed on the same way with a delay (`clockless.fanout.handoff`): never a failure.
docs/fan-out.md has the whole design.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.config import Config

from clockless.config import CLIENT_ENVIRONMENT, PerEnvironment
from clockless.fanout.accounting import PartitionAccounting
from clockless.fanout.buffer import release_buffered, start_buffered
from clockless.fanout.done import mark_done
from clockless.fanout.failures import FailureRecorder, entries_of
from clockless.fanout.finisher import NOT_COMPLETE, UNREPORTED, Finisher
from clockless.fanout.handoff import FINAL_MARGIN_SECONDS, HAND_ON_MARGIN_SECONDS, HandOff, continuation_delay
from clockless.fanout.messages import KIND_PARTITION, KIND_START, KIND_WATCH, WorkMessage
from clockless.fanout.pacing import Pacer
from clockless.fanout.queue import DeadLetters
from clockless.fanout.records import Counters, Lease, LeaseLost, PartitionRecords, now_ms, one_line, tick_key
from clockless.fanout.redelivery import come_back_soon, held_lease, lease_still_held
from clockless.fanout.replay import OUTCOME_CONTINUED, replay
from clockless.fanout.settings import WorkerSettings
from clockless.fanout.trust import (
    UntrustedMessageError,
    reject_future_tick,
    tick_entry_check,
    why_not_claimed,
)
from clockless.fanout.watch import Watch
from clockless.fanout.writer import BatchWriter
from clockless.items import METRIC_ITEMS_FAILED
from clockless.job import METRIC_FAILED, METRIC_SUCCEEDED
from clockless.ledger import STATUS_FAILED, STATUS_SUCCEEDED
from clockless.overlap import Overlap
from clockless.throttle import (
    SYSTEM_CLOCK,
    Budget,
    BudgetSpent,
    Clock,
    ThrottleRetryingClient,
    remaining_ms,
    retry_throttled,
)

if TYPE_CHECKING:
    from clockless.fanout.coordinator import FanOut
    from clockless.fanout.work import PartitionWork

OUTCOME_DONE: Final = "done"
OUTCOME_HELD: Final = "held by a live worker"
OUTCOME_ALREADY_DONE: Final = "already done"


class PartitionWorker:
    def __init__(self, fan_out: FanOut, work: Callable[[], PartitionWork[Any]]) -> None:
        self.fan_out = fan_out
        self.job = fan_out.job
        self._work_factory = work
        self._work: PartitionWork[Any] | None = None
        self._settings = PerEnvironment(WorkerSettings.from_env)
        self._clients = PerEnvironment(self._make_clients, CLIENT_ENVIRONMENT)
        self._lock = threading.Lock()
        # Waits (throttle backoff, pacing) and the time budget are measured on this clock: tests
        # and the simulator set their own.
        self.clock: Clock = SYSTEM_CLOCK
        # The adaptive rate of each partition this warm worker ran, kept across its invocations.
        self._pacers: dict[str, Pacer] = {}
        # Tests and the bench read what the last run did.
        self.last_counters = Counters()

    # ------------------------------------------------------------------------- collaborators
    def settings(self) -> WorkerSettings:
        return self._settings.get()

    def clients(self) -> tuple[Any, Any]:
        """(dynamodb, sqs), made on first use; the pool fits every lane's transaction at once."""
        return self._clients.get()

    def _make_clients(self) -> tuple[Any, Any]:
        import boto3  # noqa: PLC0415 - the handler's import stays free of clients

        pool = Config(max_pool_connections=max(10, self.settings().concurrency + 2))
        return boto3.client("dynamodb", config=pool), boto3.client("sqs")

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
                receives = int(record.attributes.approximate_receive_count or 1)
                try:
                    return self.run(record.body, context, receives=receives, receipt_handle=record.receipt_handle)
                except Exception as error:
                    if not held_lease(error):
                        self._come_back_soon(record, receives)
                    raise

            return dict(
                process_partial_response(
                    event=event, record_handler=record_handler, processor=processor, context=context
                )
            )
        finally:
            self.job.logger.thread_safe_clear_keys()

    def _come_back_soon(self, record: SQSRecord, receives: int) -> None:
        """A message this worker failed is shown again after a short backoff (clockless.fanout.redelivery)."""
        try:
            delay = come_back_soon(self.clients()[1], self.settings().work_queue_url, record.receipt_handle, receives)
        except Exception:  # the failure is what SQS must see: the visibility timeout brings it back anyway
            self.job.logger.warning("could not shorten the failed message's wait", exc_info=True)
            return
        self.job.logger.info("failed message comes back soon", extra={"receives": receives, "after_s": delay})

    def run(self, body: str, context: Any, *, receives: int = 1, receipt_handle: str | None = None) -> str:
        """One message; an exception leaves it to SQS (redelivered, then the work DLQ). `receives`:
        its ApproximateReceiveCount; `receipt_handle`: its handle, for its visibility."""
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
            budget = Budget(context, self.settings().time_budget_ms / 1000, self.clock)
            if message.kind == KIND_PARTITION:
                return self._run_partition(message, budget, metrics, receives, receipt_handle)
            if message.kind == KIND_WATCH:
                return self.watch().settle(message, budget, functools.partial(self._finish, message, budget, metrics))
            if message.kind == KIND_START:
                return start_buffered(self.clients()[0], self.settings(), self.fan_out, message)
            return self._replay(message, budget, metrics)
        except UntrustedMessageError as error:
            # Reported failed: SQS moves it to the work DLQ after maxReceiveCount (clockless.fanout.trust).
            self.job.logger.error("work message refused; nothing was written", extra={"reason": error.reason})
            raise
        finally:
            if metrics.metric_set:
                metrics.flush_metrics()

    # ------------------------------------------------------------------------ partition run
    def partition_records(self, message: WorkMessage, owner: str, budget: Budget) -> PartitionRecords:
        """The partition's records, written through a client that waits out throttles within `budget`."""
        settings = self.settings()
        return PartitionRecords(
            client=ThrottleRetryingClient(self.clients()[0], budget),
            table=settings.ledger_table,
            job=message.job,
            scheduled_time=message.time_text,
            partition=message.partition,
            owner=owner,
            retention_seconds=settings.ledger_retention_seconds,
        )

    def watch(self) -> Watch:
        """The watch over last receives (clockless.fanout.watch)."""
        settings = self.settings()
        return Watch(*self.clients(), settings.work_queue_url, settings.ledger_table, self.job.logger)

    def _run_partition(
        self, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics, receives: int, receipt_handle: str | None
    ) -> str:
        owner = f"{getattr(budget.context, 'aws_request_id', None) or 'local'}#{uuid.uuid4().hex[:12]}"
        records = self.partition_records(message, owner, budget)
        try:
            lease = self._acquire(records, message, budget, receives)
        except BudgetSpent as spent:
            # Not even the lease got through: nothing was taken, so come back later, as a throttle.
            self.handoff(budget).send(message, continuation_delay(0))
            self.job.logger.warning("the lease stayed throttled; continuation sent", extra={"throttle": str(spent)})
            return OUTCOME_CONTINUED
        if lease.done:
            self.job.logger.info("partition already done; settling the tick if it is complete")
            return self.finish_or_continue(message, budget, metrics, OUTCOME_ALREADY_DONE)
        if not lease.acquired:
            self.job.logger.info("partition held by a live worker", extra={"lease_until_ms": lease.holder_until_ms})
            return OUTCOME_HELD
        last = receives >= self.settings().max_receives
        try:
            if last:
                # A death from here on records nothing itself: the watch settles the tick.
                self.watch().last_receive(message, owner, receipt_handle, budget)
            return self._page_through(message, budget, metrics, records, lease)
        except LeaseLost:
            self.job.logger.warning("the partition's lease was taken over; the new holder goes on")
            return OUTCOME_HELD
        except Exception as error:
            # On the last receive the partition is named on the tick before the lease is released:
            # a death in between leaves the lease held, which the watch reads as a death.
            named = last and self.watch().name_on_tick(
                message, budget, functools.partial(self._finish, message, budget, metrics)
            )
            if not self._note_failure(message, owner, budget, error, release=named or not last):
                lease_still_held(error)
            raise

    def _page_through(
        self, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics, records: PartitionRecords, lease: Lease
    ) -> str:
        """Pages from the lease's cursor until the partition is done, the time budget is spent
        (continuation), or throttling outlasts it (continuation after a delay)."""
        settings = self.settings()
        work = self.work()
        final = self.partition_records(message, records.owner, budget.with_margin(FINAL_MARGIN_SECONDS))
        final.expires_at = records.expires_at  # the same bytes (and tokens) as the run's other writes
        writer = BatchWriter(
            self.clients()[0],
            PartitionAccounting(records),
            on_failed=self.failure_recorder(message, records, budget),
            concurrency=settings.concurrency,
            clock=self.clock,
            budget=budget,
            pacer=self._pacer(message.partition),
            units_per_item=settings.key_write_units_per_item,
        )
        counters = Counters()
        # Where a resumed run starts: every item before it is applied (and out of the index);
        # `stored` is the record's. A throttle between them hands on the page that moved it.
        cursor = stored = lease.cursor
        found = Counters()
        started = time.monotonic()
        pages = 0
        try:
            while True:
                page = retry_throttled(
                    functools.partial(work.read, message.partition, message.params, cursor, settings.page_size),
                    budget=budget,
                    what="reading a page",
                )
                pages += 1
                # Row by row: a row that does not decode or apply fails alone (clockless.items).
                entries = entries_of(work, page.items, message.params, message.tick_key, skip=lease.failed_items)
                found = writer.apply(entries)
                counters.add(found)
                if page.cursor is None:
                    break
                cursor = page.cursor
                # After a page, so every run makes progress even with a budget set too large.
                if budget.spent:
                    # the cursor, the page's already-done count and the lease released, in one write
                    final.hand_on(cursor, already_done=found.already_done)
                    self.handoff(budget).send(message)
                    self._log_run("time budget spent; continuation sent", counters, pages, started, writer)
                    _count_failed(metrics, counters)
                    return OUTCOME_CONTINUED
                records.store_cursor(cursor, already_done=found.already_done)
                stored = cursor
            self._mark_done(final, already_done=found.already_done)
        except BudgetSpent as spent:
            self._log_run("throttled until the time budget was spent", counters, pages, started, writer)
            _count_failed(metrics, counters)
            moved = None if cursor == stored else cursor  # its page applied, the cursor not yet stored
            note = self.handoff(budget).after_throttle(
                message,
                final=final,
                cursor=moved,
                already_done=found.already_done if moved is not None else 0,
                lease=lease,
                spent=spent,
                budget=budget,
            )
            self.job.logger.warning("throttled past the time budget; continuation sent", extra={"last_error": note})
            return OUTCOME_CONTINUED
        finally:
            self.last_counters = counters
        self._log_run("partition done", counters, pages, started, writer)
        _count_failed(metrics, counters)
        return self.finish_or_continue(message, budget, metrics, OUTCOME_DONE)

    # ------------------------------------------------------------------------- throttling
    def handoff(self, budget: Budget) -> HandOff:
        """Continuations sent while the attempt has time, throttles waited out."""
        return HandOff(self.clients()[1], self.settings().work_queue_url, budget.with_margin(HAND_ON_MARGIN_SECONDS))

    def _pacer(self, partition: str) -> Pacer:
        with self._lock:
            pacer = self._pacers.get(partition)
            if pacer is None or pacer.clock is not self.clock:
                pacer = self._pacers[partition] = Pacer(self.settings().pacing(), self.clock)
            return pacer

    def finish_or_continue(self, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics, outcome: str) -> str:
        """The finisher; when it stays throttled, a continuation runs it later (the partition is done)."""
        try:
            self._finish(message, budget, metrics)
        except BudgetSpent as spent:
            self.handoff(budget).send(message, continuation_delay(0))
            self.job.logger.warning("the finisher stayed throttled; continuation sent", extra={"throttle": str(spent)})
            return OUTCOME_CONTINUED
        return outcome

    def _note_failure(
        self, message: WorkMessage, owner: str, budget: Budget, error: BaseException, *, release: bool = True
    ) -> bool:
        """`last_error` on the partition record for operators, and (`release`) the lease released
        (the run is over), so the message's redelivery after a short backoff can take it; the error
        itself is raised by the caller. False: the lease may still be held."""
        try:
            final = self.partition_records(message, owner, budget.with_margin(FINAL_MARGIN_SECONDS))
            final.note_error(one_line(f"{type(error).__name__}: {error}"), release=release)
        except Exception:  # the failure is what SQS must see, not this note's
            self.job.logger.warning("could not note the failure on the partition record", exc_info=True)
            return False
        return True

    def _acquire(self, records: PartitionRecords, message: WorkMessage, budget: Budget, receives: int) -> Lease:
        """The partition's lease, for a message the clock and the ledger back (or
        UntrustedMessageError, nothing written): clockless.fanout.trust."""
        reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
        # The lease lives as long as this attempt can: a dead worker's lease has run out by the
        # time SQS shows its message again (visibility timeout >= 6 x the worker's timeout).
        lease_until_ms = now_ms() + remaining_ms(budget.context)
        if message.hop > 0:
            # A continuation: its partition's record exists (the run before handed it on), and
            # was made under the ledger's check.
            lease = records.acquire(
                lease_until_ms=lease_until_ms, hop=message.hop, existing_only=True, receives=receives
            )
            if lease.missing:
                never = f"a continuation (hop {message.hop}) of a partition never started"
                raise UntrustedMessageError(message.tick_key, message.partition, never)
            return lease
        total = len(self.fan_out.partitions)
        check = tick_entry_check(records.table, tick_key(message.job, message.time_text), total)
        lease = records.acquire_first(
            lease_until_ms=lease_until_ms, hop=message.hop, tick_check=check, receives=receives
        )
        if lease.untrusted is not None:
            raise UntrustedMessageError(message.tick_key, message.partition, why_not_claimed(lease.untrusted, total))
        return lease

    def _mark_done(self, records: PartitionRecords, *, already_done: int) -> None:
        mark_done(records, self.clock, already_done=already_done)

    def _finish(self, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics) -> None:
        client = ThrottleRetryingClient(self.clients()[0], budget.with_margin(FINAL_MARGIN_SECONDS))
        finisher = Finisher(client, self.settings().ledger_table, tolerance=self.fan_out.tolerance)
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
            self.job.logger.error(
                "tick failed: items failed; replay them after the fix",
                extra={"counters": _summary(counters), "replay": f"clockless work redrive {message.job}"},
            )
        if status != NOT_COMPLETE and self.job.overlap is Overlap.BUFFER:
            release_buffered(*self.clients(), self.settings(), self.job, message, budget=budget)

    @staticmethod
    def _report_success(finisher: Finisher, message: WorkMessage, metrics: EphemeralMetrics) -> None:
        """TickSucceeded out (Powertools prints the EMF line: it is in the logs, whatever this
        attempt does next), then the ledger told so (Finisher.reported)."""
        metrics.add_metric(name=METRIC_SUCCEEDED, unit=MetricUnit.Count, value=1)
        metrics.flush_metrics()
        finisher.reported(message.job, message.time_text)

    def failure_recorder(self, message: WorkMessage, records: PartitionRecords, budget: Budget) -> FailureRecorder:
        """Where a run's or a replay's failed items go: the work DLQ, an ERROR line each, the record."""
        queue = DeadLetters(
            self.clients()[1], self.settings().dead_letter_queue_url, budget.with_margin(HAND_ON_MARGIN_SECONDS)
        )
        return FailureRecorder(message, self.work(), queue, records, self.job.logger)

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

    def _replay(self, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics) -> str:
        return replay(self, message, budget, metrics)


def _count_failed(metrics: EphemeralMetrics, counters: Counters) -> None:
    if counters.failed:
        metrics.add_metric(name=METRIC_ITEMS_FAILED, unit=MetricUnit.Count, value=counters.failed)


def _summary(counters: Counters | None) -> dict[str, int] | None:
    return None if counters is None else counters.as_summary()
