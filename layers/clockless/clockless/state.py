"""The kit's state machine: what a tick and a fan-out partition can be, and which write moves them.

It sits beside `clockless.overlap` and `clockless.fanout`, not inside the fan-out, because every job's
tick entry (plain jobs' too, through overlap) has these states and both packages read them.

Read this module alone to learn the machine; docs/fan-out.md's state diagram is generated from it
(`clockless work states`).

- **States**: a partition record is `running` or `done` (`PartitionStatus`, as stored), and while
  running its lease is live or free (`PartitionPhase` adds these, the record not yet written, and
  the partition named exhausted on its tick). A tick entry is `started`, `buffered`, `skipped`,
  `succeeded` or `failed` (`TickStatus`, as stored); `TickPhase` adds the entry not yet written and
  a success whose `TickSucceeded` is not reported yet (`metric_pending`).
- **Records**: one parser each (`PartitionRecord.from_item` for partition and lane records,
  `TickEntry.from_item` for a tick entry), so no reader of the fan-out's records reads raw
  attributes.
- **Transitions**: every conditional write of the fan-out, as data (`TRANSITIONS`): its name, the
  record it writes, the states it moves from and to, and its ConditionExpression. The writes take
  their condition from here; `{...}` marks a part built per request, one term per item key
  (`PARTS`).
- **Deciders**: what a worker makes of a record it read, as plain functions: take a lease or not
  (`decide_lease`, `refusal`), settle a tick or not (`settle_decision`, `settled_status`,
  `settle_transition`).
- **Outcomes**: what a delivery says it did (`Outcome`), and what the finisher's call did (`Settle`).

Plain Python: no AWS, no clock (the callers pass `now`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any, Final

from clockless.errors import ArgumentError


# ------------------------------------------------------------------------------------------------ states
class PartitionStatus(StrEnum):
    """A partition record's `status`, as stored."""

    RUNNING = "running"
    DONE = "done"


class TickStatus(StrEnum):
    """A tick entry's `status`, as stored (clockless.ledger writes the same strings)."""

    STARTED = "started"
    BUFFERED = "buffered"
    SKIPPED = "skipped"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class PartitionPhase(StrEnum):
    """Where a partition is: its record's status and lease, or its name on the tick entry."""

    ABSENT = "no record"
    LEASED = "leased (running)"
    FREE = "free (running)"
    DONE = "done"
    # Not done, and named in the tick entry's `partitions_exhausted`: its message failed every receive.
    EXHAUSTED = "exhausted"


class TickPhase(StrEnum):
    """Where a tick is: its entry's status, or its entry not yet written."""

    ABSENT = "no entry"
    STARTED = "started"
    BUFFERED = "buffered"
    SKIPPED = "skipped"
    # `succeeded`, with `metric_pending` until a worker has emitted TickSucceeded.
    METRIC_PENDING = "succeeded (metric pending)"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Record(StrEnum):
    """The records of the ledger table the fan-out writes (clockless.fanout.keys has their keys)."""

    PARTITION = "partition"
    LANE = "lane"
    TICK = "tick"


# ---------------------------------------------------------------------------------------------- outcomes
class Outcome(StrEnum):
    """What one delivery of a work message did: its handler's outcome, logged and returned."""

    # a partition message
    DONE = "done"
    HELD = "held by a live worker"
    ALREADY_DONE = "already done"
    CONTINUED = "continued"
    # an items message
    REPLAYED = "replayed"
    # a start message
    STARTED = "buffered tick started"
    # a `watch` message an earlier release sent (the tick reaper settles a stuck tick now)
    RETIRED = "a retired kind of message: acknowledged, nothing done"


class Settle(StrEnum):
    """What one finisher call did: the status it gave the tick, or why it gave none."""

    SUCCEEDED = TickStatus.SUCCEEDED.value
    FAILED = TickStatus.FAILED.value
    NOT_COMPLETE = "not complete"
    ALREADY_SETTLED = "already settled"
    # Succeeded, and no worker has said yet that it emitted TickSucceeded for it.
    UNREPORTED = "succeeded, TickSucceeded not reported yet"


class LeaseDecision(StrEnum):
    """What a worker makes of a partition record whose lease it may want."""

    TAKE = "take"
    DONE = "done"
    HELD = "held"


# ----------------------------------------------------------------------------------------------- records
def _text(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    if not isinstance(value, Mapping):
        return None
    text = value.get("S", value.get("N"))
    return None if text is None else str(text)


def _number(item: Mapping[str, Any], name: str) -> int | None:
    text = _text(item, name)
    return None if text is None else int(text)


def _strings(item: Mapping[str, Any], name: str) -> frozenset[str]:
    value = item.get(name)
    return frozenset(value.get("SS", [])) if isinstance(value, Mapping) else frozenset()


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition record (or a lane record, `lane` set) as read back; no record: `exists` False
    and every field empty."""

    exists: bool = False
    partition: str = ""
    lane: int | None = None
    status: PartitionStatus | None = None
    lease_owner: str = ""
    lease_until: int | None = None
    hops: int = 0
    cursor_text: str | None = None
    receives: int | None = None
    last_error: str | None = None
    throttle_continuations: int | None = None
    failed_items: frozenset[str] = frozenset()
    replayed_items: frozenset[str] = frozenset()
    applied: int = 0
    already_done: int = 0
    failed: int = 0

    @classmethod
    def from_item(cls, item: Mapping[str, Any] | None) -> PartitionRecord:
        if not item:
            return cls()
        rest = (_text(item, "scheduled_time") or "").partition("#p")[2]
        partition, lane = rest, None
        if "#l" in rest:
            partition, _, number = rest.rpartition("#l")
            lane = int(number)
        status = _text(item, "status")
        return cls(
            exists=True,
            partition=partition,
            lane=lane,
            status=None if status is None else PartitionStatus(status),
            lease_owner=_text(item, "lease_owner") or "",
            lease_until=_number(item, "lease_until"),
            hops=_number(item, "hops") or 0,
            cursor_text=_text(item, "cursor"),
            receives=_number(item, "receives"),
            last_error=_text(item, "last_error"),
            throttle_continuations=_number(item, "throttle_continuations"),
            failed_items=_strings(item, "failed_items"),
            replayed_items=_strings(item, "replayed_items"),
            applied=_number(item, "applied") or 0,
            already_done=_number(item, "already_done") or 0,
            failed=_number(item, "failed") or 0,
        )

    @property
    def done(self) -> bool:
        return self.status is PartitionStatus.DONE

    @property
    def is_lane(self) -> bool:
        return self.lane is not None

    @property
    def lease_ends(self) -> int:
        """`lease_until`, 0 when the record has none."""
        return self.lease_until or 0

    @property
    def cursor(self) -> dict[str, Any] | None:
        return None if self.cursor_text is None else dict(json.loads(self.cursor_text))

    def phase(self, now_ms: int) -> PartitionPhase:
        """The record's phase at `now_ms` (the exhausted mark is the tick entry's: `TickEntry`)."""
        if not self.exists:
            return PartitionPhase.ABSENT
        if self.done:
            return PartitionPhase.DONE
        return PartitionPhase.LEASED if self.lease_ends >= now_ms else PartitionPhase.FREE


@dataclass(frozen=True, slots=True)
class TickEntry:
    """A tick's ledger entry as the fan-out reads it; no entry: `exists` False, every field empty."""

    exists: bool = False
    status_text: str | None = None
    partitions_total: int | None = None
    partitions_done: int = 0
    exhausted: tuple[str, ...] = ()
    metric_pending: bool = False
    started_at: str | None = None
    overlap_with: str | None = None
    released_by: str | None = None
    start_failed: str | None = None
    finished_by: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_item(cls, item: Mapping[str, Any] | None) -> TickEntry:
        if not item:
            return cls()
        return cls(
            exists=True,
            status_text=_text(item, "status"),
            partitions_total=_number(item, "partitions_total"),
            partitions_done=_number(item, "partitions_done") or 0,
            exhausted=tuple(sorted(_strings(item, "partitions_exhausted"))),
            metric_pending="metric_pending" in item,
            started_at=_text(item, "started_at"),
            overlap_with=_text(item, "overlap_with"),
            released_by=_text(item, "released_by"),
            start_failed=_text(item, "start_failed"),
            finished_by=_text(item, "finished_by"),
            extra=dict(item),
        )

    @property
    def status(self) -> TickStatus | None:
        """The stored status; None for no entry, or a status the fan-out does not know."""
        text = self.status_text
        if text is None or text not in TickStatus._value2member_map_:
            return None
        return TickStatus(text)

    def text(self, name: str) -> str | None:
        """Any other attribute of the entry, as text (`reason`, `trigger`, `error`, ...)."""
        return _text(self.extra, name)


# ------------------------------------------------------------------------------------------- transitions
_PLACEHOLDER: Final = re.compile(r"\{(\w+)\}")
# The parts of a condition built per request: a term per item key (its value name, `:k0`, `:k1`, ...).
PARTS: Final[Mapping[str, str]] = {
    "not_listed": "NOT contains(failed_items, {key})",
    "still_listed": "contains(failed_items, {key})",
}
_KEY_JOINER: Final = " AND "
_KEY_NAME: Final = r":k\d+"


@dataclass(frozen=True, slots=True)
class Transition:
    """One conditional write of the fan-out: the record it writes, from which states to which (the
    same states on both sides: it leaves each as it is), and
    its ConditionExpression (`{part}`: one of `PARTS`, which `render` fills in per request);
    `condition` None: the write is unconditional (it rides in a transaction whose other actions are
    conditional)."""

    name: str
    record: Record
    sources: tuple[PartitionPhase | TickPhase, ...]
    targets: tuple[PartitionPhase | TickPhase, ...]
    condition: str | None
    why: str

    def render(self, keys: Sequence[str] = ()) -> str:
        """The condition, each of its parts one term per value name in `keys` (`:k0`, ...)."""
        if self.condition is None:
            raise ArgumentError(f"transition {self.name} has no condition to render")
        parts = {name: each_key(PARTS[name], keys) for name in _PLACEHOLDER.findall(self.condition)}
        if parts and not keys:
            raise ArgumentError(f"transition {self.name}'s condition holds of item keys: name at least one")
        return self.condition.format(**parts)

    def matches(self, condition: str | None) -> bool:
        """Whether `condition` is this transition's, its parts rendered for any number of keys."""
        if self.condition is None or condition is None:
            return self.condition is None and condition is None
        return _pattern(self.condition).fullmatch(condition) is not None


@cache
def _pattern(condition: str) -> re.Pattern[str]:
    pieces = _PLACEHOLDER.split(condition)
    # split() alternates literal text and part names: a part matches its term repeated, a key each.
    return re.compile(
        "".join(re.escape(piece) if index % 2 == 0 else _part(piece) for index, piece in enumerate(pieces))
    )


def _part(name: str) -> str:
    term = re.escape(PARTS[name]).replace(re.escape("{key}"), _KEY_NAME)
    return f"{term}(?:{re.escape(_KEY_JOINER)}{term})*"


def each_key(term: str, names: Sequence[str]) -> str:
    """One `term` per value name (`{key}` in it replaced by the name), joined: the part of a
    condition that holds of every item key of a request."""
    return _KEY_JOINER.join(term.format(key=name) for name in names)


_NOT_DONE: Final = "(attribute_not_exists(#status) OR #status <> :done)"
_LEASE_FREE_OR_MINE: Final = "(attribute_not_exists(lease_until) OR lease_until < :now OR lease_owner = :me)"
_P = PartitionPhase
_T = TickPhase

# The partition and lane records' transitions (clockless.fanout.store writes them).
TAKE_FIRST_LEASE: Final = Transition(
    "take-first-lease",
    Record.PARTITION,
    (_P.ABSENT,),
    (_P.LEASED,),
    "attribute_not_exists(#status)",
    "a partition's first run creates its record with the lease, in one transaction with check-tick-claimed",
)
TAKE_LEASE: Final = Transition(
    "take-lease",
    Record.PARTITION,
    (_P.ABSENT, _P.FREE, _P.LEASED, _P.EXHAUSTED),
    (_P.LEASED,),
    f"{_NOT_DONE} AND {_LEASE_FREE_OR_MINE}",
    "a redelivery takes a partition not done whose lease ran out or is its own (a resend)",
)
TAKE_CONTINUED_LEASE: Final = Transition(
    "take-continued-lease",
    Record.PARTITION,
    (_P.FREE, _P.LEASED, _P.EXHAUSTED),
    (_P.LEASED,),
    f"attribute_exists(#status) AND {_NOT_DONE} AND {_LEASE_FREE_OR_MINE}",
    "a continuation (hop > 0) takes only a record that exists",
)
STORE_CURSOR: Final = Transition(
    "store-cursor",
    Record.PARTITION,
    (_P.LEASED,),
    (_P.LEASED,),
    "lease_owner = :me AND (attribute_not_exists(#cursor) OR #cursor <> :cursor)",
    "the cursor after a page (with its already-done count), only if it moves: a resend adds nothing",
)
HAND_ON: Final = Transition(
    "hand-on",
    Record.PARTITION,
    (_P.LEASED,),
    (_P.FREE,),
    STORE_CURSOR.condition,
    "the cursor stored and the lease released in one write, for a continuation",
)
RELEASE: Final = Transition(
    "release",
    Record.PARTITION,
    (_P.LEASED,),
    (_P.FREE,),
    "lease_owner = :me",
    "the lease released (the cursor stands), with last_error after a throttle or a failed run",
)
MARK_DONE: Final = Transition(
    "mark-done",
    Record.PARTITION,
    (_P.LEASED,),
    (_P.DONE,),
    "lease_owner = :me AND #status <> :done",
    "the partition done, in one transaction with count-done",
)
NAME_EXHAUSTED: Final = Transition(
    "name-exhausted",
    Record.PARTITION,
    (_P.ABSENT, _P.LEASED, _P.FREE, _P.EXHAUSTED),
    (_P.EXHAUSTED,),
    _NOT_DONE,
    "a run raising on its last receive names its partition on the tick (with count-exhausted)",
)
LIST_FAILED: Final = Transition(
    "list-failed",
    Record.PARTITION,
    (_P.LEASED,),
    (_P.LEASED,),
    "attribute_not_exists(failed_items) OR ({not_listed})",
    "items that cannot be applied listed and counted once (not_listed: NOT contains(failed_items, :kN))",
)
NOTE_FAILURES: Final = Transition(
    "note-failures",
    Record.PARTITION,
    (_P.LEASED,),
    (_P.LEASED,),
    "attribute_not_exists(failure_notes) OR size(failure_notes) < :max",
    "the first failures noted for the finisher to list, while fewer than MAX_LISTED are",
)
COUNT_REPLAYED: Final = Transition(
    "count-replayed",
    Record.PARTITION,
    (_P.LEASED, _P.DONE),
    (_P.LEASED, _P.DONE),
    "{still_listed}",
    "replayed items moved from failed to applied once (still_listed: contains(failed_items, :kN))",
)
COUNT_APPLIED: Final = Transition(
    "count-applied",
    Record.LANE,
    (_P.LEASED,),
    (_P.LEASED,),
    None,
    "a lane's applied items counted in the transaction that applies them (their writes are conditional)",
)
# The tick entry's transitions (the finisher, the trust check, overlap, the tick reaper).
CHECK_TICK_CLAIMED: Final = Transition(
    "check-tick-claimed",
    Record.TICK,
    (_T.STARTED,),
    (_T.STARTED,),
    "partitions_total BETWEEN :least AND :partitions_total",
    "a partition's first run holds the tick to a fan-out coordinator's claim that has its partition and no more "
    "partitions than this worker runs (a coordinator deployed before a raised shard count fanned out fewer)",
)
COUNT_DONE: Final = Transition(
    "count-done",
    Record.TICK,
    (_T.STARTED, _T.FAILED),
    (_T.STARTED, _T.FAILED),
    "attribute_exists(partitions_total)",
    "partitions_done + 1, and the partition out of partitions_exhausted (a redriven one)",
)
COUNT_EXHAUSTED: Final = Transition(
    "count-exhausted",
    Record.TICK,
    (_T.STARTED, _T.FAILED),
    (_T.STARTED, _T.FAILED),
    "attribute_exists(partitions_total)",
    "the partition added to partitions_exhausted (a set: once however often)",
)
COUNT_UNRUN: Final = Transition(
    "count-unrun",
    Record.TICK,
    (_T.STARTED, _T.FAILED),
    (_T.STARTED, _T.FAILED),
    "partitions_total >= :least",
    "a partition this worker cannot run (unreadable on its last receive) added to partitions_exhausted, only if "
    "the tick has it (:least: its place among this worker's, or one past them for one beyond its count)",
)
SETTLE: Final = Transition(
    "settle",
    Record.TICK,
    (_T.STARTED, _T.FAILED),
    (_T.METRIC_PENDING, _T.FAILED),
    "partitions_done = partitions_total AND #status <> :succeeded",
    "the finisher settles a tick whose every partition is done, as the count it read",
)
SETTLE_EXHAUSTED: Final = Transition(
    "settle-exhausted",
    Record.TICK,
    (_T.STARTED, _T.FAILED),
    (_T.FAILED,),
    "partitions_done = :done AND size(partitions_exhausted) = :exhausted AND #status <> :succeeded",
    "the finisher fails a tick whose partitions are done or exhausted, as it read them",
)
SETTLE_ALL_EXHAUSTED: Final = Transition(
    "settle-all-exhausted",
    Record.TICK,
    (_T.STARTED, _T.FAILED),
    (_T.FAILED,),
    "(attribute_not_exists(partitions_done) OR partitions_done = :done) "
    "AND size(partitions_exhausted) = :exhausted AND #status <> :succeeded",
    "the same when no partition is done (the counter may never have been written)",
)
REPORTED: Final = Transition(
    "reported",
    Record.TICK,
    (_T.METRIC_PENDING,),
    (_T.SUCCEEDED,),
    "attribute_exists(metric_pending)",
    "TickSucceeded is in the logs: no later delivery emits it again",
)
HOLD: Final = Transition(
    "hold",
    Record.TICK,
    (_T.ABSENT,),
    (_T.SKIPPED, _T.BUFFERED),
    "attribute_not_exists(job)",
    "overlap: a tick held back behind one still running, in one transaction with check-earlier",
)
CHECK_EARLIER: Final = Transition(
    "check-earlier",
    Record.TICK,
    (_T.STARTED, _T.BUFFERED),
    (_T.STARTED, _T.BUFFERED),
    "#status = :status",
    "overlap: the earlier tick still as read (started or buffered), or the held tick runs",
)
RELEASE_BUFFERED: Final = Transition(
    "release-buffered",
    Record.TICK,
    (_T.BUFFERED, _T.STARTED, _T.FAILED),
    (_T.STARTED,),
    "#status = :buffered OR released_by = :by OR start_failed = :by",
    "a start message claims the buffered tick once (its resend, or a redrive after the tick reaper failed it)",
)
FAIL_START: Final = Transition(
    "fail-start",
    Record.TICK,
    (_T.BUFFERED,),
    (_T.FAILED,),
    "#status = :buffered AND overlap_with = :after",
    "the tick reaper, past the tick's bound, fails a buffered tick whose start never ran",
)
REAP: Final = Transition(
    "reap",
    Record.TICK,
    (_T.STARTED,),
    (_T.FAILED,),
    "#status = :started AND claim_id = :claim "
    "AND (attribute_not_exists(partitions_done) OR partitions_done = :done) AND attribute_exists(partitions_total)",
    "the tick reaper fails a fanned-out tick not done by its bound, as it read it (same claim, same count done), "
    "its partitions not done added to partitions_exhausted",
)

TRANSITIONS: Final[tuple[Transition, ...]] = (
    TAKE_FIRST_LEASE,
    CHECK_TICK_CLAIMED,
    TAKE_LEASE,
    TAKE_CONTINUED_LEASE,
    STORE_CURSOR,
    COUNT_APPLIED,
    LIST_FAILED,
    NOTE_FAILURES,
    HAND_ON,
    RELEASE,
    MARK_DONE,
    COUNT_DONE,
    NAME_EXHAUSTED,
    COUNT_EXHAUSTED,
    COUNT_UNRUN,
    COUNT_REPLAYED,
    SETTLE,
    SETTLE_EXHAUSTED,
    SETTLE_ALL_EXHAUSTED,
    REPORTED,
    HOLD,
    CHECK_EARLIER,
    RELEASE_BUFFERED,
    FAIL_START,
    REAP,
)


def transition_of(condition: str | None, record: Record | None = None) -> Transition | None:
    """The first transition (of `record`, when given) whose condition `condition` is."""
    for transition in TRANSITIONS:
        if (record is None or transition.record is record) and transition.matches(condition):
            return transition
    return None


# --------------------------------------------------------------------------------------------- deciders
def refusal(old: PartitionRecord) -> LeaseDecision:
    """Why a lease was refused, from the record as the refusal returned it: done, or held."""
    return LeaseDecision.DONE if old.done else LeaseDecision.HELD


def decide_lease(old: PartitionRecord, *, owner: str, now_ms: int) -> LeaseDecision:
    """A first run's lease refused because the record exists: take it as a plain lease (`TAKE`:
    free, run out, or this run's), or leave it (done, or held by a live worker), as the record the
    refused transaction returned says, so a duplicate costs no second request."""
    live = old.done or old.lease_ends >= now_ms
    if live and old.lease_owner != owner:
        return refusal(old)
    return LeaseDecision.TAKE


def settle_decision(entry: TickEntry) -> Settle | None:
    """What the finisher makes of the tick entry before it reads the records: nothing to do yet
    (`NOT_COMPLETE`), done already (`ALREADY_SETTLED`, or `UNREPORTED` while TickSucceeded is
    pending), or None: every partition is done or exhausted, so sum and settle."""
    total = entry.partitions_total
    if total is None or entry.partitions_done + len(entry.exhausted) < total:
        return Settle.NOT_COMPLETE
    if entry.status is TickStatus.SUCCEEDED:
        return Settle.UNREPORTED if entry.metric_pending else Settle.ALREADY_SETTLED
    return None


def settled_status(entry: TickEntry, *, tolerated: bool) -> TickStatus:
    """The status a complete tick gets: succeeded when no partition is exhausted and its failed
    items are within the job's tolerance (`tolerated`)."""
    return TickStatus.SUCCEEDED if not entry.exhausted and tolerated else TickStatus.FAILED


def settle_transition(entry: TickEntry) -> Transition:
    """The settling update's transition: its condition holds the count as this finisher read it."""
    if not entry.exhausted:
        return SETTLE
    return SETTLE_EXHAUSTED if entry.partitions_done else SETTLE_ALL_EXHAUSTED
