"""A fanned-out tick's progress, read from the ledger records docs/fan-out.md describes: the tick
entry (partitions_total, partitions_done, status, and the summary once finished) and the tick's
work records under `<job>#work` (a partition record per partition, a lane record per worker lane,
whose applied/already_done/failed counters add up to the tick's so far).

Each partition is in one state (`partition_state`), read from its record alone (the work
dead-letter queue is never read: SQS has no peek, and a receive raises the count it reports): done;
dead-lettered (its record's receive count reached the work queue's maxReceiveCount and that attempt
is over without the partition done, so SQS moves the message to the work DLQ instead of delivering
it again); retrying
(an attempt failed: the record's `last_error`, or a lease that ran out without the partition being
done, so SQS brings the message back); continued (the lease handed on with a cursor, a continuation
message on its way); running (a live lease). `receives` (the message's ApproximateReceiveCount at
its last acquire), `last_error` and `throttle_continuations` are read when the kit records them and
left out when it does not. A tick with a retrying or dead-lettered partition is `failing`, never
`running`: its workers are not getting the work done."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from clockless import format_scheduled_time, parse_scheduled_time
from clockless.fanout.finisher import Finisher
from clockless.fanout.keys import COUNTERS
from clockless.ledger import STATUS_FAILED, STATUS_STARTED, STATUS_SUCCEEDED, RunLedger
from clockless.state import PartitionRecord
from clockless_tools.operations.targets import one_line

# What `status` calls a started tick one of whose partitions is retrying or dead-lettered.
FAILING = "failing"
# How the kit's hand-on after throttling begins its `last_error` (clockless.fanout.continuation).
THROTTLE_NOTE = "throttled"


class PartitionState(StrEnum):
    DONE = "done"
    RUNNING = "running"
    RETRYING = "retrying"
    CONTINUED = "continued"
    DEAD_LETTERED = "dead-lettered"
    NOT_STARTED = "not started"


# The states that make a started tick failing.
FAILING_STATES = frozenset({PartitionState.RETRYING, PartitionState.DEAD_LETTERED})


@dataclass(frozen=True)
class PartitionProgress:
    partition: str
    state: PartitionState
    receives: int | None = None  # the message's receive count at its last acquire, when recorded
    hops: int = 0  # continuations so far
    throttle_continuations: int | None = None
    last_error: str | None = None

    def describe(self) -> str:
        """One line, e.g. `p3 retrying (receive 3, last error: ThrottlingException: Rate exceeded)`."""
        details = []
        if self.receives is not None and self.state is not PartitionState.DONE:
            details.append(f"receive {self.receives}")
        if self.hops:
            details.append(f"{self.hops} continuation(s)")
        if self.throttle_continuations:
            details.append(f"{self.throttle_continuations} after throttling")
        if self.last_error and self.state is not PartitionState.DONE:
            details.append(f"last error: {one_line(self.last_error)}")
        return f"p{self.partition} {self.state.value}" + (f" ({', '.join(details)})" if details else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "state": self.state.value,
            "receives": self.receives,
            "hops": self.hops,
            "throttle_continuations": self.throttle_continuations,
            "last_error": self.last_error,
        }


def partition_state(item: dict[str, Any], *, now_ms: int, max_receives: int | None = None) -> PartitionProgress:
    """One partition record's state (see the module's docstring)."""
    record = PartitionRecord.from_item(item)
    receives = record.receives
    last_error = record.last_error
    lease_until = record.lease_until
    # The kit notes why it handed a partition on after throttling (`throttled: ...`) as well as why
    # an attempt failed; only the second is a failure. The note stays after the next acquire.
    failed = bool(last_error) and not str(last_error).startswith(THROTTLE_NOTE)
    live = lease_until is not None and lease_until >= now_ms
    if record.done:
        state = PartitionState.DONE
    elif lease_until == 0 and record.cursor_text is not None:
        state = PartitionState.CONTINUED
    elif max_receives is not None and receives is not None and receives >= max_receives and not live:
        state = PartitionState.DEAD_LETTERED  # its last receive is over, undone: SQS moves the message to the DLQ
    elif failed or (receives is not None and receives > 1):
        state = PartitionState.RETRYING  # an attempt failed, or SQS redelivered the message after one
    elif lease_until is not None and lease_until < now_ms:
        state = PartitionState.RETRYING  # its attempt died or failed: SQS shows the message again
    else:
        state = PartitionState.RUNNING
    return PartitionProgress(
        partition=record.partition,
        state=state,
        receives=receives,
        hops=record.hops,
        throttle_continuations=record.throttle_continuations,
        last_error=last_error,
    )


@dataclass(frozen=True)
class TickProgress:
    job: str
    scheduled_time: datetime
    status: str
    partitions_total: int
    partitions_done: int
    # partition records a worker has started and not finished
    partitions_running: int
    applied: int
    already_done: int
    failed: int
    error: str | None = None
    # Each partition the tick's records name, in partition order (none once the tick succeeded).
    partitions: list[PartitionProgress] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status != STATUS_STARTED

    def count(self, state: PartitionState) -> int:
        return sum(1 for partition in self.partitions if partition.state is state)

    @property
    def failing(self) -> bool:
        """Started, with a partition whose attempts fail (retrying) or gave up (dead-lettered)."""
        return not self.finished and any(p.state in FAILING_STATES for p in self.partitions)

    @property
    def never_fanned_out(self) -> bool:
        """Failed with no partition record: the coordinator claimed the tick and raised before any
        partition began (its workers write a record as they start)."""
        return (
            self.status == STATUS_FAILED
            and self.partitions_done == 0
            and all(p.state is PartitionState.NOT_STARTED for p in self.partitions)
        )

    @property
    def shown_status(self) -> str:
        """The ledger's status, except that a started tick whose workers fail is `failing`."""
        return FAILING if self.failing else self.status

    def describe(self) -> str:
        """One line: `7/16 partitions done (3 running, 1 retrying), 1,234 applied, 3 already done, 0 failed`."""
        states = [
            f"{self.count(state)} {state.value}"
            for state in (
                PartitionState.RUNNING,
                PartitionState.CONTINUED,
                PartitionState.RETRYING,
                PartitionState.DEAD_LETTERED,
                PartitionState.NOT_STARTED,
            )
            if self.count(state)
        ]
        shown = f" ({', '.join(states)})" if states and not self.finished else ""
        return (
            f"{self.partitions_done}/{self.partitions_total} partitions done{shown}, {self.applied:,} applied, "
            f"{self.already_done:,} already done, {self.failed:,} failed"
        )

    def troubles(self) -> list[str]:
        """One line per partition retrying or dead-lettered, with its receive count and last error."""
        return [p.describe() for p in self.partitions if p.state in FAILING_STATES]

    def grouped_troubles(self, named: int = 8) -> list[str]:
        """`troubles`, partitions whose line says the same (state, receive count, last error) in one
        line with their count and the first `named` of them: `64 partitions retrying (...): p0, p1, …`."""
        groups: dict[str, list[str]] = {}
        for p in self.partitions:
            if p.state in FAILING_STATES:
                groups.setdefault(p.describe().removeprefix(f"p{p.partition} "), []).append(p.partition)
        lines = []
        for said, partitions in groups.items():
            if len(partitions) == 1:
                lines.append(f"p{partitions[0]} {said}")
                continue
            names = ", ".join(f"p{p}" for p in partitions[:named])
            more = f", … ({len(partitions) - named} more)" if len(partitions) > named else ""
            lines.append(f"{len(partitions)} partitions {said}: {names}{more}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "scheduled_time": format_scheduled_time(self.scheduled_time),
            "status": self.shown_status,
            "ledger_status": self.status,
            "partitions_total": self.partitions_total,
            "partitions_done": self.partitions_done,
            "partitions_running": self.partitions_running,
            "applied": self.applied,
            "already_done": self.already_done,
            "failed": self.failed,
            "error": self.error,
            "partitions": [partition.as_dict() for partition in self.partitions],
        }


def _number(item: dict[str, Any], name: str) -> int:
    value = item.get(name)
    return int(value["N"]) if isinstance(value, dict) and "N" in value else 0


def _partition_order(partition: str) -> tuple[int, int | str]:
    """Partitions by number (p2 before p10), named ones after them."""
    return (0, int(partition)) if partition.isdigit() else (1, partition)


def _text(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return str(value["S"]) if isinstance(value, dict) and "S" in value else None


def _query_all(ledger: RunLedger, **request: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request["TableName"] = ledger.table_name
    while True:
        response = ledger.client.query(**request)
        items.extend(response.get("Items") or [])
        if "LastEvaluatedKey" not in response:
            return items
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def tick_progress(
    ledger: RunLedger,
    entry: dict[str, Any],
    *,
    now_ms: int,
    max_receives: int | None = None,
) -> TickProgress:
    """A fanned-out tick entry's progress: a finished tick's summary, or the counters summed so far
    and each partition's state. `max_receives`: the work queue's maxReceiveCount (a partition whose
    last allowed receive failed is dead-lettered)."""
    job, scheduled_time = str(_text(entry, "job")), str(_text(entry, "scheduled_time"))
    status = _text(entry, "status") or STATUS_STARTED
    summary = json.loads(_text(entry, "summary") or "{}") if status == STATUS_SUCCEEDED else {}
    partitions: list[PartitionProgress] = []
    if summary:
        counters = {name: int(summary.get(name, 0)) for name in COUNTERS}
    else:
        records = Finisher(ledger.client, ledger.table_name).records(job, scheduled_time)
        counters = {name: sum(_number(record, name) for record in records) for name in COUNTERS}
        partitions = [
            partition_state(record, now_ms=now_ms, max_receives=max_receives)
            for record in records
            if not PartitionRecord.from_item(record).is_lane
        ]
        partitions.sort(key=lambda p: _partition_order(p.partition))
        total = _number(entry, "partitions_total")
        partitions += [
            PartitionProgress("?", PartitionState.NOT_STARTED) for _ in range(max(0, total - len(partitions)))
        ]
    running = sum(1 for p in partitions if p.state is PartitionState.RUNNING)
    return TickProgress(
        job=job,
        scheduled_time=parse_scheduled_time(scheduled_time),
        status=status,
        partitions_total=_number(entry, "partitions_total"),
        partitions_done=_number(entry, "partitions_done"),
        partitions_running=running,
        error=_text(entry, "error"),
        partitions=partitions,
        **counters,
    )


def fanned_out_ticks(
    ledger: RunLedger,
    job: str,
    start: datetime,
    end: datetime,
    *,
    now_ms: int,
    max_receives: int | None = None,
) -> list[TickProgress]:
    """The job's ticks in [start, end) that fanned out, oldest first, each with its progress."""
    entries = _query_all(
        ledger,
        KeyConditionExpression="job = :job AND scheduled_time BETWEEN :start AND :end",
        FilterExpression="attribute_exists(partitions_total)",
        ExpressionAttributeValues={
            ":job": {"S": job},
            ":start": {"S": format_scheduled_time(start)},
            ":end": {"S": format_scheduled_time(end)},
        },
    )
    return [
        tick_progress(ledger, entry, now_ms=now_ms, max_receives=max_receives)
        for entry in entries
        if parse_scheduled_time(str(_text(entry, "scheduled_time"))) < end
    ]
