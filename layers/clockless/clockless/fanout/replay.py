"""Replaying a partition's failed items (moved back from the work DLQ by `clockless work redrive`).

A replay reads its items' rows again from the partition (the fix may have changed them, and a row
that never decoded has only its key in the DLQ), each row decoded and applied on its own as a
partition run does. A key the partition no longer returns (the row was removed or applied by
hand) has nothing left to do: it leaves the failed list counted already done."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from clockless.fanout.failures import entries_of
from clockless.fanout.finish import finish_or_continue
from clockless.fanout.retry import continuation_delay
from clockless.fanout.trust import reject_future_tick, replayable_keys
from clockless.fanout.types import Counters
from clockless.fanout.writer import AccountingConflict, BatchWriter, Entry
from clockless.state import Outcome
from clockless.throttle import BudgetSpent, retry_throttled

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.store import PartitionStore
    from clockless.fanout.work import PartitionWork
    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget

REPLAY_ATTEMPTS: Final = 3


def replay(worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics) -> Outcome:
    """Failed items moved back from the DLQ: read again and applied once, counted on the partition
    record only while they are still listed failed (a duplicate replay changes nothing). Throttled
    past the budget, the same message is sent again after a delay (what it applied is counted,
    and a second replay of it changes nothing)."""
    reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
    work = worker.work()
    records = worker.partition_records(message, f"replay#{uuid.uuid4().hex[:12]}", budget)
    keys = message.replayed_keys()
    if keys is None:  # an items message from before keys were sent: its items name them
        keys = [work.item_key(work.decode(data)) for data in message.items]
    counters = Counters()
    try:
        for _ in range(REPLAY_ATTEMPTS):
            still_failed = replayable_keys(records, message, keys)
            wanted = [key for key in keys if key in still_failed]
            if not wanted:
                break
            writer = BatchWriter(
                worker.clients()[0],
                ReplayAccounting(records),
                on_failed=worker.failure_recorder(message, records, budget),
                concurrency=1,
                clock=worker.clock,
                budget=budget,
            )
            try:
                counters.add(writer.apply(read_again(work, message, wanted, worker.settings().page_size, budget)))
                break
            except AccountingConflict:
                continue  # a concurrent replay took some of them: read the set again
        else:
            raise AccountingConflict(f"replaying {len(keys)} item(s) met concurrent replays {REPLAY_ATTEMPTS} times")
    except BudgetSpent as spent:
        worker.handoff(budget).resend(message, continuation_delay(0))
        worker.job.logger.warning("replay throttled past the time budget; sent again", extra={"throttle": str(spent)})
        return Outcome.CONTINUED
    worker.last_counters = counters
    worker.job.logger.info("failed items replayed", extra={"counters": counters.as_summary()})
    return finish_or_continue(worker, message, budget, metrics, Outcome.REPLAYED)


def read_again(
    work: PartitionWork[Any], message: WorkMessage, keys: list[str], page_size: int, budget: Budget
) -> list[Entry]:
    """The entries of `keys`, their rows read again from the partition page by page (stopping once
    all are found); a key not found is an entry with nothing to do (counted already done)."""
    wanted = set(keys)
    entries: list[Entry] = []
    cursor = None
    while wanted:
        page = retry_throttled(
            functools.partial(work.read, message.partition, message.params, cursor, page_size),
            budget=budget,
            what="reading a page to replay",
        )
        found = entries_of(work, page.items, message.params, message.tick_key, only=wanted)
        entries.extend(found)
        wanted.difference_update(entry.key for entry in found)
        if page.cursor is None:
            break
        cursor = page.cursor
    return entries + [Entry(key, [], None) for key in keys if key in wanted]


class ReplayAccounting:
    """A replay moves its items out of `failed_items`; items failing again stay there."""

    def __init__(self, records: PartitionStore) -> None:
        self.records = records

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]:
        keys = [*applied, *already_done]
        return [self.records.replay_counter(keys, len(applied), len(already_done))] if keys else []
