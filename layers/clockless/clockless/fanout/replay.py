"""Replaying a partition's failed items (moved back from the work DLQ by `clockless work redrive`)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Final

from clockless.fanout.accounting import ReplayAccounting
from clockless.fanout.handoff import continuation_delay
from clockless.fanout.records import Counters
from clockless.fanout.trust import reject_future_tick, replayable_keys
from clockless.fanout.writer import AccountingConflict, BatchWriter, Entry
from clockless.throttle import BudgetSpent

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.worker import PartitionWorker
    from clockless.throttle import Budget

OUTCOME_CONTINUED: Final = "continued"
OUTCOME_REPLAYED: Final = "replayed"
REPLAY_ATTEMPTS: Final = 3


def replay(worker: PartitionWorker, message: WorkMessage, budget: Budget, metrics: EphemeralMetrics) -> str:
    """Failed items moved back from the DLQ: applied once, counted on the partition record
    only while they are still listed failed (a duplicate replay changes nothing). Throttled
    past the budget, the same message is sent again after a delay (what it applied is
    counted, and a second replay of it changes nothing)."""
    reject_future_tick(message.tick_key, message.partition, message.scheduled_time)
    work = worker.work()
    records = worker._records(message, f"replay#{uuid.uuid4().hex[:12]}", budget)
    items = [work.decode(data) for data in message.items]
    counters = Counters()
    try:
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
                worker.clients()[0],
                ReplayAccounting(records),
                on_failed=worker._dead_letters(message, work, budget),
                concurrency=1,
                clock=worker.clock,
                budget=budget,
            )
            try:
                counters.add(writer.apply(entries))
                break
            except AccountingConflict:
                continue  # a concurrent replay took some of them: read the set again
        else:
            raise AccountingConflict(f"replaying {len(items)} item(s) met concurrent replays {REPLAY_ATTEMPTS} times")
    except BudgetSpent as spent:
        worker._handoff(budget).resend(message, continuation_delay(0))
        worker.job.logger.warning("replay throttled past the time budget; sent again", extra={"throttle": str(spent)})
        return OUTCOME_CONTINUED
    worker.last_counters = counters
    worker.job.logger.info("failed items replayed", extra={"counters": counters.as_summary()})
    return worker._finish_or_continue(message, budget, metrics, OUTCOME_REPLAYED)
