"""Running a partition: one `partition` message, from its lease to the tick's finisher.

`run_partition` reads top to bottom:

1. **lease**: the partition taken for this run, for a message the clock and the ledger back
   (clockless.fanout.trust), from where the last run stopped; a partition already done goes
   straight to the finisher, one a live worker holds is left to it;
2. **pages**: read from the lease's cursor, page by page, each row turned into its writes on its
   own (a row that does not decode or apply fails alone: clockless.fanout.failures);
3. **writer**: each page applied by the batch writer (clockless.fanout.writer), its lanes in
   parallel and paced (clockless.fanout.pacing), what it applied counted in the same transactions;
4. **cursor**: stored after each page, with the items the page found already done;
5. **outside**: after the last page, the rows whose key sorts outside every key the job reads
   (`ReadsOutside`: `not-a-date` in a date key), failed by name, once per tick;
6. **done**: then the partition marked done and the tick's `partitions_done`
   counted, in one transaction; then the finisher (clockless.fanout.finish).

When the time budget is spent after a page, or throttling outlasts it, the partition is handed on
to a later run (clockless.fanout.continuation); when the run raises, its message is left to SQS
(clockless.fanout.redelivery).
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from clockless.errors import StateError
from clockless.fanout.failures import entries_of, outside_entries
from clockless.fanout.finish import finish_or_continue
from clockless.fanout.redelivery import run_failed
from clockless.fanout.retry import (
    MAX_CONFLICT_ATTEMPTS,
    RETRY_REASONS,
    TRANSIENT_ERRORS,
    WorkRetriesSpent,
    conflict_backoff_seconds,
    continuation_delay,
)
from clockless.fanout.store import PartitionStore, now_ms
from clockless.fanout.trust import UntrustedMessageError, fanned_out_into_more, reject_future_tick, why_not_claimed
from clockless.fanout.types import Counters, Lease, LeaseLost
from clockless.fanout.work import ReadsOutside
from clockless.fanout.writer import BatchWriter
from clockless.items import METRIC_ITEMS_FAILED
from clockless.state import Outcome
from clockless.throttle import (
    Budget,
    BudgetSpent,
    Clock,
    cancellation_codes,
    client_request_token,
    remaining_ms,
    retry_throttled,
)

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.work import Page, PartitionWork
    from clockless.fanout.worker import PartitionWorker


def run_partition(
    worker: PartitionWorker,
    message: WorkMessage,
    budget: Budget,
    metrics: EphemeralMetrics,
    *,
    receives: int,
) -> Outcome:
    """One partition message: lease, pages, done, finisher. Its outcome, or the run's error raised
    for SQS (redelivered after a short backoff, then the work DLQ)."""
    owner = lease_owner(budget.context)
    records = worker.partition_records(message, owner, budget)
    try:
        lease = take_lease(worker, records, message, budget, receives=receives)
    except BudgetSpent as spent:
        # Not even the lease got through: nothing was taken, so come back later, as a throttle.
        worker.handoff(budget).send(message, continuation_delay(0))
        worker.job.logger.warning("the lease stayed throttled; continuation sent", extra={"throttle": str(spent)})
        return Outcome.CONTINUED
    if lease.done:
        worker.job.logger.info("partition already done; settling the tick if it is complete")
        return finish_or_continue(worker, message, budget, metrics, Outcome.ALREADY_DONE)
    if not lease.acquired:
        worker.job.logger.info("partition held by a live worker", extra={"lease_until_ms": lease.holder_until_ms})
        return Outcome.HELD
    try:
        if not page_through(worker, message, budget, metrics, records=records, lease=lease):
            return Outcome.CONTINUED
        return finish_or_continue(worker, message, budget, metrics, Outcome.DONE)
    except LeaseLost:
        worker.job.logger.warning("the partition's lease was taken over; the new holder goes on")
        return Outcome.HELD
    except Exception as error:
        run_failed(worker, message, budget, metrics, owner=owner, receives=receives, error=error)
        raise


# ------------------------------------------------------------------------------------------------ lease
def lease_owner(context: Any) -> str:
    """A run's own name in its partition's lease: its Lambda request and a random part (a batch's
    runs share the request)."""
    return f"{getattr(context, 'aws_request_id', None) or 'local'}#{uuid.uuid4().hex[:12]}"


def take_lease(
    worker: PartitionWorker,
    records: PartitionStore,
    message: WorkMessage,
    budget: Budget,
    *,
    receives: int,
) -> Lease:
    """The partition's lease, for a message the clock and the ledger back (or
    UntrustedMessageError, nothing written): clockless.fanout.trust."""
    reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
    # The lease lives as long as this attempt can: a dead worker's lease has run out by the
    # time SQS shows its message again (visibility timeout >= 6 x the worker's timeout).
    lease_until_ms = now_ms() + remaining_ms(budget.context)
    if message.hop > 0:
        # A continuation: its partition's record exists (the run before handed it on), and
        # was made under the ledger's check.
        lease = records.acquire(lease_until_ms=lease_until_ms, hop=message.hop, existing_only=True, receives=receives)
        if lease.missing:
            never = f"a continuation (hop {message.hop}) of a partition never started"
            raise UntrustedMessageError(message.tick_key, message.partition, never)
        return lease
    total = len(worker.partitions)
    # A tick its coordinator fanned out into fewer partitions (deployed before a raised shard count)
    # is run with its own count: this partition must be among its first ones (docs/fan-out.md).
    least = worker.partitions.index(message.partition) + 1
    lease = records.acquire_first(
        lease_until_ms=lease_until_ms, hop=message.hop, partitions_total=total, least=least, receives=receives
    )
    if lease.untrusted is not None:
        raise UntrustedMessageError(
            message.tick_key,
            message.partition,
            why_not_claimed(lease.untrusted, total, least),
            more_partitions=fanned_out_into_more(lease.untrusted, total),
        )
    return lease


# ------------------------------------------------------------------------------------- pages and cursor
def page_through(
    worker: PartitionWorker,
    message: WorkMessage,
    budget: Budget,
    metrics: EphemeralMetrics,
    *,
    records: PartitionStore,
    lease: Lease,
) -> bool:
    """Pages from the lease's cursor until the partition is done (True), or handed on (False): when
    the time budget is spent after a page (a continuation at once) or throttling outlasts it (a
    continuation after a delay)."""
    run = PartitionRun.begin(worker, message, budget, records, lease)
    try:
        while True:
            page = run.read_page()
            run.apply(page)
            if page.cursor is None:
                break
            run.cursor = page.cursor
            # After a page, so every run makes progress even with a budget set too large.
            if budget.spent:
                run.hand_on_after_budget(page.cursor)
                run.ended("time budget spent; continuation sent", metrics)
                return False
            run.store_cursor(page.cursor)
        run.report_outside()
        run.mark_done()
    except BudgetSpent as spent:
        run.ended("throttled until the time budget was spent", metrics)
        run.hand_on_after_throttle(spent)
        return False
    finally:
        worker.last_counters = run.counters
    run.ended("partition done", metrics)
    return True


@dataclass
class PartitionRun:
    """One run's way through its partition's pages: where it is, what it found, and the records
    and writer it goes with."""

    worker: PartitionWorker
    message: WorkMessage
    budget: Budget
    lease: Lease
    work: PartitionWork[Any]
    # The records of the run's writes, and of its last ones (which may wait out throttles longer).
    records: PartitionStore
    final: PartitionStore
    writer: BatchWriter
    page_size: int
    # Where the next page starts: every item before it is applied (and out of the index);
    # `stored` is the record's. A throttle between them hands on the page that moved it.
    cursor: dict[str, Any] | None
    stored: dict[str, Any] | None
    counters: Counters = field(default_factory=Counters)
    # The last page's counters: its already-done items are counted with the cursor after it.
    found: Counters = field(default_factory=Counters)
    pages: int = 0
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def begin(
        cls, worker: PartitionWorker, message: WorkMessage, budget: Budget, records: PartitionStore, lease: Lease
    ) -> PartitionRun:
        settings = worker.settings()
        work = worker.work()
        final = worker.final_records(message, records.owner, budget)
        final.expires_at = records.expires_at  # the same bytes (and tokens) as the run's other writes
        writer = BatchWriter(
            worker.clients()[0],
            PartitionAccounting(records),
            on_failed=worker.failure_recorder(message, records, budget),
            concurrency=settings.concurrency,
            clock=worker.clock,
            budget=budget,
            pacer=worker.pacer(message.partition),
            units_per_item=settings.key_write_units_per_item,
        )
        return cls(
            worker, message, budget, lease, work, records, final, writer, settings.page_size, lease.cursor, lease.cursor
        )

    def read_page(self) -> Page[Any]:
        message = self.message
        read = functools.partial(self.work.read, message.partition, message.params, self.cursor, self.page_size)
        page = retry_throttled(read, budget=self.budget, what="reading a page")
        self.pages += 1
        return page

    def apply(self, page: Page[Any]) -> None:
        """The page's rows applied, row by row: a row that does not decode or apply fails alone
        (clockless.items); the items of an earlier run's failed list are skipped."""
        message = self.message
        entries = entries_of(self.work, page.items, message.params, message.tick_key, skip=self.lease.failed_items)
        self.found = self.writer.apply(entries)
        self.counters.add(self.found)

    def report_outside(self) -> None:
        """The partition's rows whose key no due read reaches (`ReadsOutside`), failed by name, once
        per tick: after the last page, and not again for the keys an earlier run of this tick failed."""
        work = self.work
        if not isinstance(work, ReadsOutside):
            return
        message = self.message
        rows = retry_throttled(
            lambda: list(work.read_outside(message.partition, message.params)),
            budget=self.budget,
            what="reading the keys outside the index's range",
        )
        for start in range(0, len(rows), self.page_size):
            entries = outside_entries(self.work, rows[start : start + self.page_size], skip=self.lease.failed_items)
            self.counters.add(self.writer.apply(entries))

    def store_cursor(self, cursor: dict[str, Any]) -> None:
        self.records.store_cursor(cursor, already_done=self.found.already_done)
        self.stored = cursor

    def mark_done(self) -> None:
        mark_done(self.final, self.worker.clock, already_done=self.found.already_done)

    def hand_on_after_budget(self, cursor: dict[str, Any]) -> None:
        handoff = self.worker.handoff(self.budget)
        handoff.after_budget(self.message, final=self.final, cursor=cursor, already_done=self.found.already_done)

    def hand_on_after_throttle(self, spent: BudgetSpent) -> None:
        moved = None if self.cursor == self.stored else self.cursor  # its page applied, the cursor not yet stored
        note = self.worker.handoff(self.budget).after_throttle(
            self.message,
            final=self.final,
            cursor=moved,
            already_done=self.found.already_done if moved is not None else 0,
            lease=self.lease,
            spent=spent,
            budget=self.budget,
        )
        self.worker.job.logger.warning("throttled past the time budget; continuation sent", extra={"last_error": note})

    def ended(self, what: str, metrics: EphemeralMetrics) -> None:
        """The run's INFO line, and its failed items counted in ItemsFailed."""
        self.worker.job.logger.info(
            what,
            extra={
                "counters": self.counters.as_summary(),
                "pages": self.pages,
                "transactions": self.writer.transactions,
                "duration_ms": round((time.monotonic() - self.started) * 1000),
            },
        )
        if self.counters.failed:
            metrics.add_metric(name=METRIC_ITEMS_FAILED, unit=MetricUnit.Count, value=self.counters.failed)


class PartitionAccounting:
    """A partition run counts in its lane's record, and failed items on the partition record."""

    def __init__(self, records: PartitionStore) -> None:
        self.records = records

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]:
        # Already-done items are counted with the cursor (PartitionStore.store_cursor), not here.
        actions = []
        if applied:
            actions.append(self.records.lane_counter(lane, len(applied)))
        if failed:
            actions.append(self.records.failed_record(list(failed)))
        return actions


# ------------------------------------------------------------------------------------------------- done
def mark_done(records: PartitionStore, clock: Clock, *, already_done: int) -> None:
    """Partition done + the tick's partitions_done, once: throttles waited out by the records'
    client, conflicts resent (the tick entry is every partition's), answered from its token if
    it was applied."""
    dynamodb = records.client
    transact_items = records.done_transaction(already_done=already_done)
    token = client_request_token(transact_items)
    for attempt in range(MAX_CONFLICT_ATTEMPTS):
        try:
            dynamodb.transact_write_items(TransactItems=transact_items, ClientRequestToken=token)
            return
        except dynamodb.exceptions.TransactionCanceledException as error:
            codes = cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise LeaseLost(f"partition {records.partition} is not this worker's to finish: {codes}") from None
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                raise StateError(
                    f"tick {records.job}@{records.scheduled_time} has no partitions_total in the ledger: "
                    "its coordinator did not claim it through the kit"
                ) from None
            if not any(code in RETRY_REASONS for code in codes):
                raise
        except dynamodb.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") not in TRANSIENT_ERRORS:
                raise
        clock.sleep(conflict_backoff_seconds(attempt))
    raise WorkRetriesSpent(f"marking partition {records.partition} done stayed in conflict")
