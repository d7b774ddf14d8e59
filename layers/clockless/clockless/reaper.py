"""How every stuck fanned-out tick settles: past its bound, it is settled `failed`, naming the
partitions not done.

A fanned-out tick settles when its last partition is done (clockless.fanout.finisher), or when a
run that raises on its message's last receive names its partition (clockless.fanout.redelivery).
Anything else that stops a partition (a run that dies on its last receive, a receive that never
reaches a worker, a buffered tick's `start` message that dies, any two of them at once) leaves the
tick `started` or `buffered`. The tick-reaper job (functions/tick_reaper) reads the ledger on its
own schedule and settles each such tick once its bound has passed: the job's `grace_minutes`
(the latest a healthy tick can succeed, rule dead-man-alarm) after its scheduled time or its
start, whichever is later. It reads only the ledger, so it settles ticks whatever stopped them,
a worker that cannot start included.

- `started` and complete (its last partition's message died after the done transaction, before
  its finisher): the finisher settles it, as that delivery would have (no tolerated failures);
- `started`, not complete: `failed`, naming each partition not done (with its state: still
  leased, its last error, its receives) and how many never started; those with a record are added
  to `partitions_exhausted`, as a run failing its last receive adds its own, so a redrive of some
  of them leaves the tick `failed` naming only the rest. Conditioned on the entry as
  read (still `started` by the same claim, the same count of partitions done): a partition done
  meanwhile makes the reaper look again at its next tick.
- `buffered` (its start never ran): `failed`, with `start_failed` set, so a start message
  redriven from the work DLQ, or the release of a late-settling tick before it, still starts it
  (clockless.overlap's release condition).

The reaper never touches a partition record or its lease: a partition still running goes on
and applies each item once, its done transaction counts it, and the finisher settles the tick
again when the last partition is done (its condition: every partition done and not already
`succeeded`), so a late `done` replaces the reaper's `failed` with what the tick did. Every
write is safe to repeat: the reaper's ticks are delivered at least once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from clockless.errors import ClocklessError
from clockless.fanout.finisher import Finisher
from clockless.fanout.tick_store import TickStore, open_ticks
from clockless.items import MAX_LISTED, REASON_PARTITION, FailedItem, dump_listed
from clockless.state import PartitionRecord, Settle, TickEntry, TickStatus
from clockless.tick import format_scheduled_time, parse_scheduled_time

SETTLED: Final = "settled"
CHANGED: Final = "changed meanwhile: looked at again next tick"


class ReapedJobsError(ClocklessError, ValueError):
    """The reaper's list of jobs and bounds (REAPED_JOBS) cannot be read."""


@dataclass(frozen=True, slots=True)
class ReapedJob:
    """A fanned-out job whose ticks the reaper settles, and its bound (its grace)."""

    name: str
    bound: timedelta


def parse_reaped_jobs(text: str) -> tuple[ReapedJob, ...]:
    """`session-cleanup=58,window-generation=135`: each job and its bound in minutes."""
    jobs = []
    for part in (piece.strip() for piece in text.split(",")):
        name, _, minutes = part.partition("=")
        if not name.strip() or not minutes.strip().isdigit() or int(minutes) < 1:
            raise ReapedJobsError(f"REAPED_JOBS: {part!r} is not <job>=<minutes> (minutes a whole number >= 1)")
        jobs.append(ReapedJob(name.strip(), timedelta(minutes=int(minutes))))
    if len({job.name for job in jobs}) != len(jobs):
        raise ReapedJobsError(f"REAPED_JOBS names a job twice: {text!r}")
    return tuple(jobs)


@dataclass(frozen=True, slots=True)
class OpenTick:
    """A tick entry still `started` or `buffered`, as the reaper reads it."""

    job: str
    scheduled_time: str
    status: str
    started_at: str | None = None
    claim_id: str | None = None
    partitions_total: int | None = None
    partitions_done: int = 0
    overlap_with: str | None = None
    trigger: str = "schedule"

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> OpenTick:
        return cls.of(TickEntry.from_item(item))

    @classmethod
    def of(cls, entry: TickEntry) -> OpenTick:
        return cls(
            job=str(entry.text("job")),
            scheduled_time=str(entry.text("scheduled_time")),
            status=str(entry.status_text),
            started_at=entry.started_at,
            claim_id=entry.text("claim_id"),
            partitions_total=entry.partitions_total,
            partitions_done=entry.partitions_done,
            overlap_with=entry.overlap_with,
            trigger=entry.text("trigger") or "schedule",
        )

    def due(self, bound: timedelta) -> datetime:
        """When its bound passes: `bound` after its scheduled time, or after its start if later (a
        buffered tick started when the one before it settled, a backfill)."""
        since = parse_scheduled_time(self.scheduled_time)
        if self.started_at:
            since = max(since, parse_scheduled_time(self.started_at))
        return since + bound

    def stuck(self, bound: timedelta, now: datetime) -> bool:
        """Past its bound and not settled. A `started` tick needs its partitions and its claim
        (every fanned-out claim writes both, a released buffered tick too: one without is its own
        attempt's to settle)."""
        if now < self.due(bound):
            return False
        if self.status == TickStatus.BUFFERED:
            return self.overlap_with is not None
        return self.status == TickStatus.STARTED and self.partitions_total is not None and self.claim_id is not None


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition record as the reaper reads it (it writes none)."""

    name: str
    done: bool
    lease_until_ms: int = 0
    receives: int = 0
    last_error: str | None = None

    @classmethod
    def of(cls, record: PartitionRecord) -> PartitionState:
        return cls(
            name=record.partition,
            done=record.done,
            lease_until_ms=record.lease_ends,
            receives=record.receives or 0,
            last_error=record.last_error,
        )

    def why(self, now: datetime) -> str:
        """What an operator reads about it on the tick."""
        if self.lease_until_ms >= now.timestamp() * 1000:
            state = "still leased by a run"
        else:
            state = "no run holds it: its message died or waits in the work DLQ"
        detail = f"not done by the tick's bound: {state} ({self.receives} receives)"
        return f"{detail}; last error: {self.last_error}" if self.last_error else detail


@dataclass(frozen=True, slots=True)
class NotDone:
    """What a stuck tick's partitions are: those not done, and how many never started."""

    partitions: tuple[PartitionState, ...]
    never_started: int

    @classmethod
    def of(cls, tick: OpenTick, records: Sequence[PartitionState]) -> NotDone:
        undone = tuple(sorted((record for record in records if not record.done), key=lambda r: r.name))
        return cls(undone, max(0, (tick.partitions_total or 0) - len(records)))

    def failures(self, now: datetime) -> list[FailedItem]:
        listed = [FailedItem(f"partition {p.name}", REASON_PARTITION, p.why(now)) for p in self.partitions]
        if self.never_started:
            listed.append(
                FailedItem(
                    f"{self.never_started} partitions",
                    REASON_PARTITION,
                    "never started by the tick's bound: no run took their messages",
                )
            )
        return listed[:MAX_LISTED]

    def error(self, job: str) -> str:
        parts = []
        if self.partitions:
            parts.append(f"partition {', '.join(p.name for p in self.partitions)} not done")
        if self.never_started:
            parts.append(f"{self.never_started} partitions never started")
        what = "; ".join(parts) or "partitions not done"
        return (
            f"{what} by the tick's bound: see `clockless work show {job}`, then "
            f"`clockless work redrive {job}` (a partition that finishes later settles the tick again)"
        )


@dataclass(frozen=True, slots=True)
class Reaped:
    """One tick the reaper settled (or found changed)."""

    job: str
    scheduled_time: str
    was: str
    outcome: str
    trigger: str
    not_done: tuple[str, ...] = ()
    # What it was settled as: `failed`, or what the finisher said of a complete tick.
    status: str = TickStatus.FAILED


class StuckTicks:
    """The reaper's reads of the ledger table and its two conditional writes, the only ones it
    makes (each through clockless.fanout.store, its condition a transition of clockless.state:
    `reap` and `fail-start`)."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table
        self.finisher = Finisher(client, table)

    def _tick(self, tick: OpenTick | Reaped) -> TickStore:
        return TickStore(self.client, self.table, tick.job, tick.scheduled_time)

    def open_ticks(self, job: str, start: datetime, end: datetime) -> list[OpenTick]:
        """The job's ticks scheduled in [start, end] still `started` or `buffered`."""
        entries = open_ticks(self.client, self.table, job, format_scheduled_time(start), format_scheduled_time(end))
        return [OpenTick.of(entry) for entry in entries]

    def partitions(self, tick: OpenTick) -> list[PartitionState]:
        """The tick's partition records (its lane records left out)."""
        records = (PartitionRecord.from_item(item) for item in self._tick(tick).records())
        return [PartitionState.of(record) for record in records if not record.is_lane]

    def finish(self, tick: OpenTick) -> Settle:
        """A complete tick settled by the finisher, as its last partition's delivery would have
        (without a job's tolerated failures, which its code declares: none by default); what it
        said (NOT_COMPLETE: partitions are not done)."""
        status, _ = self.finisher.finish(
            tick.job, tick.scheduled_time, replay_hint=f"clockless work redrive {tick.job}"
        )
        return status

    def reported(self, tick: Reaped) -> None:
        """TickSucceeded of a tick the finisher settled here has been emitted (Finisher.reported)."""
        self.finisher.reported(tick.job, tick.scheduled_time)

    def fail_started(self, tick: OpenTick, not_done: NotDone, now: datetime) -> bool:
        """The tick `failed`, naming `not_done`, only while it is as read: `started` by the same
        claim, the same partitions done. False: it changed (a partition done, a new claim)."""
        summary = {
            "partitions": tick.partitions_total,
            "partitions_not_done": len(not_done.partitions) + not_done.never_started,
        }
        return self._tick(tick).reap(
            claim_id=tick.claim_id or "",
            partitions_done=tick.partitions_done,
            error=not_done.error(tick.job)[:1000],
            failures=dump_listed(not_done.failures(now)),
            summary=json.dumps(summary, sort_keys=True),
            mark=uuid.uuid4().hex,
            not_done=[partition.name for partition in not_done.partitions],
        )

    def fail_buffered(self, tick: OpenTick) -> bool:
        """A buffered tick whose start never ran `failed`, only while it is still buffered behind the
        same tick; `start_failed` lets its start still start it (clockless.overlap)."""
        after = tick.overlap_with or ""
        until = format_scheduled_time(parse_scheduled_time(tick.scheduled_time) + timedelta(minutes=1))
        error = (
            f"buffered behind {after}, it never started by its bound: its start message died, or the "
            f"tick before it never settled; run it again: clockless backfill {tick.job} "
            f"--from {tick.scheduled_time} --to {until}"
        )
        return self._tick(tick).fail_start(after=after, error=error, mark=uuid.uuid4().hex)


def reap(store: StuckTicks, jobs: Sequence[ReapedJob], *, now: datetime, lookback: timedelta) -> list[Reaped]:
    """Every stuck tick of `jobs` scheduled in the `lookback` before its bound, settled as of `now`
    (the reaper's own tick: a late delivery of it reaps no more than its tick would have)."""
    reaped = []
    for job in jobs:
        for tick in store.open_ticks(job.name, now - job.bound - lookback, now - job.bound):
            if not tick.stuck(job.bound, now):
                continue
            names: tuple[str, ...] = ()
            status: str = TickStatus.FAILED
            if tick.status == TickStatus.BUFFERED:
                settled = store.fail_buffered(tick)
            elif (finished := store.finish(tick)) is not Settle.NOT_COMPLETE:
                # Every partition done (or named exhausted) and the finisher never ran after the
                # last: its message died after the done transaction. The finisher settles it.
                settled, status = finished in (Settle.SUCCEEDED, Settle.FAILED, Settle.UNREPORTED), finished
            else:
                not_done = NotDone.of(tick, store.partitions(tick))
                settled, names = store.fail_started(tick, not_done, now), tuple(p.name for p in not_done.partitions)
            outcome = SETTLED if settled else CHANGED
            reaped.append(Reaped(job.name, tick.scheduled_time, tick.status, outcome, tick.trigger, names, status))
    return reaped
