"""The finisher: once every partition is done, sum the tick's counters and settle its status.

Any worker may run it, any number of times: it reads the tick entry (consistent), and only when
`partitions_done = partitions_total` sums the partition and lane records (one Query) and writes
`succeeded` (no item failed, or no more than the job tolerates) or `failed` (more did: replay
them), with the first failed items listed (`failures`), conditioned on the count still being
complete and the tick not already succeeded.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from clockless.fanout.failures import failures_noted
from clockless.fanout.keys import EXHAUSTED, METRIC_PENDING
from clockless.fanout.tick_store import TickStore
from clockless.fanout.types import Counters
from clockless.items import NO_TOLERANCE, REASON_PARTITION, FailedItem, Tolerance, dump_listed, listed
from clockless.ledger import FAILURES, SUMMARY_WHOLE_TICK, iso_now
from clockless.state import (
    PartitionRecord,
    Settle,
    TickEntry,
    TickStatus,
    Transition,
    settle_decision,
    settle_transition,
    settled_status,
)
from clockless.tick import parse_scheduled_time


@dataclass(frozen=True, slots=True)
class Progress:
    """A fanned-out tick as the ledger has it now."""

    partitions_total: int | None
    partitions_done: int
    status: TickStatus | None
    counters: Counters

    @property
    def complete(self) -> bool:
        return self.partitions_total is not None and self.partitions_done >= self.partitions_total


def _duration_ms(started_at: str | None) -> int | None:
    if not started_at:
        return None
    try:
        started = parse_scheduled_time(started_at)
    except ValueError:
        return None
    return max(0, round((time.time() - started.timestamp()) * 1000))


def _exhausted(partition: str) -> FailedItem:
    why = "its message failed every receive, or the tick reaper found it not done by the tick's bound: see the work DLQ"
    return FailedItem(f"partition {partition}", REASON_PARTITION, why)


def _failed_error(failed: int, exhausted: list[str], replay_hint: str) -> str:
    parts = [f"partition {', '.join(exhausted)} failed every receive or its tick's bound"] if exhausted else []
    if failed or not exhausted:
        parts.append(f"{failed} items failed")
    return f"{'; '.join(parts)}: replay them after the fix: {replay_hint}"


def _still_complete(entry: TickEntry, values: dict[str, Any]) -> Transition:
    """The settling update's transition, its condition the partitions as this finisher read them
    and not succeeded (every partition exhausted: the counter may never have been written)."""
    if entry.exhausted:
        values[":exhausted"] = {"N": str(len(entry.exhausted))}
        values[":done"] = {"N": str(entry.partitions_done)}
    return settle_transition(entry)


def _sum(records: list[dict[str, Any]]) -> Counters:
    counters = Counters()
    for item in records:
        record = PartitionRecord.from_item(item)
        counters.add(Counters(record.applied, record.already_done, record.failed))
    return counters


def _summary_and_failures(
    entry: TickEntry, records: list[dict[str, Any]], counters: Counters
) -> tuple[dict[str, int], list[FailedItem]]:
    """The tick's summary, and the first failed items (of every partition, in partition order)
    beside the count."""
    exhausted = list(entry.exhausted)
    summary = {**counters.as_summary(), "partitions": int(entry.partitions_total or 0)}
    failures = listed(failure for record in records for failure in failures_noted(record))
    if exhausted:
        # Partitions whose messages failed every receive, or that the tick reaper found not done by
        # the tick's bound: their items after the failure were never read, so they come first and
        # fail the tick whatever the tolerance.
        summary["partitions_exhausted"] = len(exhausted)
        failures = [_exhausted(partition) for partition in exhausted] + failures
    return summary, failures


@dataclass(frozen=True, slots=True)
class _Settling:
    """The update that settles a complete tick: the status it gives, its expression, transition
    (whose condition it takes) and values."""

    status: Settle
    update: str
    transition: Transition
    values: dict[str, Any]

    @classmethod
    def of(
        cls,
        job: str,
        entry: TickEntry,
        records: list[dict[str, Any]],
        counters: Counters,
        *,
        succeeded: bool,
        replay_hint: str,
    ) -> _Settling:
        exhausted = list(entry.exhausted)
        summary, failures = _summary_and_failures(entry, records, counters)
        values: dict[str, Any] = {
            ":summary": {"S": json.dumps(summary, sort_keys=True)},
            ":scope": {"S": SUMMARY_WHOLE_TICK},
            ":now": {"S": iso_now()},
            ":succeeded": {"S": TickStatus.SUCCEEDED.value},
        }
        # `finished_by`: a resend of this very update after a lost answer finds its own mark.
        values[":finisher"] = {"S": uuid.uuid4().hex}
        sets = "summary = :summary, summary_scope = :scope, finished_at = :now, finished_by = :finisher"
        duration = _duration_ms(entry.started_at)
        if duration is not None:
            # From the claim that fanned the tick out to its last item: the tick's duration.
            sets += ", duration_ms = :duration"
            values[":duration"] = {"N": str(duration)}
        removes = []
        if failures:
            sets += f", {FAILURES} = :failures"
            values[":failures"] = {"S": dump_listed(failures)}
        else:
            removes.append(FAILURES)
        if succeeded:
            status = Settle.SUCCEEDED
            update = f"SET #status = :succeeded, succeeded_job = :job, {METRIC_PENDING} = :metric, {sets}"
            removes.append("#error")
            values[":job"] = {"S": job}
            values[":metric"] = {"S": "TickSucceeded"}
        else:
            status = Settle.FAILED
            update = f"SET #status = :failed, #error = :error, {sets}"
            values[":failed"] = {"S": TickStatus.FAILED.value}
            values[":error"] = {"S": _failed_error(counters.failed, exhausted, replay_hint)}
        if removes:
            update += " REMOVE " + ", ".join(removes)
        transition = _still_complete(entry, values)
        return cls(status, update, transition, values)


class Finisher:
    def __init__(self, client: Any, table: str, *, tolerance: Tolerance = NO_TOLERANCE) -> None:
        self.client = client
        self.table = table
        self.tolerance = tolerance

    def counters(self, job: str, scheduled_time: str) -> Counters:
        """The tick's counters summed over its partition and lane records."""
        return _sum(self.records(job, scheduled_time))

    def records(self, job: str, scheduled_time: str) -> list[dict[str, Any]]:
        """The tick's partition and lane records (one Query per MB, read consistently)."""
        return self._store(job, scheduled_time).records()

    def _store(self, job: str, scheduled_time: str) -> TickStore:
        return TickStore(self.client, self.table, job, scheduled_time)

    def progress(self, job: str, scheduled_time: str) -> Progress:
        entry = self._entry(job, scheduled_time)
        return Progress(
            partitions_total=entry.partitions_total,
            partitions_done=entry.partitions_done,
            status=entry.status,
            counters=self.counters(job, scheduled_time),
        )

    def _entry(self, job: str, scheduled_time: str) -> TickEntry:
        projection = f"partitions_total, partitions_done, #status, started_at, {METRIC_PENDING}, {EXHAUSTED}"
        return self._store(job, scheduled_time).read(projection=projection)

    def finish(self, job: str, scheduled_time: str, *, replay_hint: str) -> tuple[Settle, Counters | None]:
        """Settle the tick if its last partition is done: (the status it was given, the counters),
        or (NOT_COMPLETE / ALREADY_SETTLED / UNREPORTED, None) when there was nothing for this call
        to do (`settle_decision`)."""
        entry = self._entry(job, scheduled_time)
        decided = settle_decision(entry)
        if decided is not None:
            return decided, None
        records = self.records(job, scheduled_time)
        counters = _sum(records)
        tolerated = self.tolerance.allows(counters.failed, counters.found)
        succeeded = settled_status(entry, tolerated=tolerated) is TickStatus.SUCCEEDED
        settling = _Settling.of(job, entry, records, counters, succeeded=succeeded, replay_hint=replay_hint)
        return self._settle(job, scheduled_time, settling), counters

    def _settle(self, job: str, scheduled_time: str, settling: _Settling) -> Settle:
        """The settling update, conditioned on the count the finisher read: the status it gave, or
        ALREADY_SETTLED when another call settled the tick first."""
        applied, old = self._store(job, scheduled_time).settle(settling.transition, settling.update, settling.values)
        if not applied:
            if old.finished_by == settling.values[":finisher"]["S"]:
                return settling.status  # this call's own update, its answer lost and resent
            return Settle.ALREADY_SETTLED  # another worker finished it
        # UPDATED_OLD may leave out an attribute set to the value it had: the status did not change.
        old_status = old.status_text or settling.status
        return settling.status if old_status != settling.status else Settle.ALREADY_SETTLED

    def reported(self, job: str, scheduled_time: str) -> None:
        """TickSucceeded of this tick has reached the logs (EMF): no later delivery emits it again.

        The metric is emitted before this write and after the update that said `succeeded`, so a
        worker that dies anywhere in between leaves `metric_pending` on the entry, and the
        redelivery of its message (its partition done, the tick settled) emits it. Duplicates
        are bounded by the deliveries that read the entry while it is pending: the finishing
        one, and any that die between their emission and this write or run at the same time."""
        self._store(job, scheduled_time).reported()
