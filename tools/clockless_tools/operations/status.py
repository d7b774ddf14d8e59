"""`clockless status`: per job, the last success and failure, the next ticks, and the expected ticks
the ledger does not show as succeeded."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from clockless import format_scheduled_time
from clockless.items import REASON_PARTITION
from clockless.ledger import (
    STATUS_FAILED,
    STATUS_SKIPPED,
    STATUS_STARTED,
    STATUS_SUCCEEDED,
    LedgerEntry,
    RunLedger,
)
from clockless.schedule.expressions import ScheduleExpressionError, ScheduleSpec
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.operations.pause import StateChange, is_paused_at, job_pauses, paused_intervals, state_history
from clockless_tools.operations.progress import FAILING_STATES, TickProgress, fanned_out_ticks
from clockless_tools.operations.targets import JobTarget, OperationError
from clockless_tools.operations.work import work_queues
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template


@dataclass(frozen=True)
class JobStatus:
    job: str
    function_id: str
    expression: str
    window_start: datetime
    window_end: datetime
    last_success: LedgerEntry | None
    last_failure: LedgerEntry | None
    next_ticks: list[datetime]
    expected: int
    missing: list[datetime]
    skipped: list[datetime] = field(default_factory=list)
    # Ticks of the window that fell while the job was paused: expected, not missed.
    paused: list[datetime] = field(default_factory=list)
    paused_since: StateChange | None = None
    # Fanned-out ticks of the window still running or failed, and the latest one: their progress.
    fanned_out: list[TickProgress] = field(default_factory=list)
    # What a tick arriving while an earlier one runs does (clockless.overlap), as the job's code says.
    overlap: str | None = None
    # Per missing tick, what the ledger says of it: missed (no entry), failed, failing, running, buffered.
    missing_states: dict[datetime, str] = field(default_factory=dict)

    @property
    def failing(self) -> list[datetime]:
        """Started ticks whose fanned-out partitions fail: a failure under way, not yet recorded."""
        return [tick.scheduled_time for tick in self.fanned_out if tick.failing]

    @property
    def latest_failure(self) -> tuple[datetime, str] | None:
        """The newest failed or failing tick with what went wrong, or None."""
        found = [(t, "failing") for t in self.failing]
        if self.last_failure is not None:
            found.append((self.last_failure.scheduled_time, "failed"))
        return max(found) if found else None

    def _failing_entry(self) -> dict[str, Any] | None:
        """The newest failure as `last_failure` has it when it is a failing tick (no `failed` entry yet)."""
        latest = self.latest_failure
        if latest is None or latest[1] != "failing":
            return None
        tick = next(t for t in self.fanned_out if t.scheduled_time == latest[0] and t.failing)
        troubles = tick.troubles()
        return {
            "scheduled_time": format_scheduled_time(tick.scheduled_time),
            "status": "failing",
            "ledger_status": tick.status,
            "error": f"{len(troubles)} partition(s) failing: {troubles[0]}" if troubles else None,
            "partitions_failing": [p.partition for p in tick.partitions if p.state in FAILING_STATES],
        }

    def as_dict(self) -> dict[str, Any]:
        def entry(e: LedgerEntry | None) -> dict[str, Any] | None:
            if e is None:
                return None
            return {
                "scheduled_time": format_scheduled_time(e.scheduled_time),
                "status": e.status,
                "attempts": e.attempts,
                # "last_attempt": earlier attempts may have done part of the work before they failed
                "summary_scope": e.summary_scope,
                "trigger": e.trigger,
                "finished_at": e.finished_at,
                "error": e.error,
                # Items that failed alone (clockless.items): the count, and the first ones listed.
                "failed_items": e.failed_items,
                "failures": [failure.as_record() for failure in e.failures],
            }

        return {
            "job": self.job,
            "function": self.function_id,
            "schedule": self.expression,
            "window": [format_scheduled_time(self.window_start), format_scheduled_time(self.window_end)],
            "last_success": entry(self.last_success),
            # What the table's "last failure" shows: a failing tick when it is the newest failure.
            "last_failure": self._failing_entry() or entry(self.last_failure),
            "last_failed": entry(self.last_failure),
            "next_ticks": [format_scheduled_time(t) for t in self.next_ticks],
            "expected": self.expected,
            "missing": [format_scheduled_time(t) for t in self.missing],
            "missing_states": {format_scheduled_time(t): state for t, state in sorted(self.missing_states.items())},
            "failing": [format_scheduled_time(t) for t in self.failing],
            "skipped": [format_scheduled_time(t) for t in self.skipped],
            "paused": [format_scheduled_time(t) for t in self.paused],
            "paused_since": None if self.paused_since is None else self.paused_since.as_dict(),
            "fanned_out": [progress.as_dict() for progress in self.fanned_out],
            "overlap": self.overlap,
        }


def _entries_by_time(ledger: RunLedger, job: str, start: datetime, end: datetime) -> dict[datetime, LedgerEntry]:
    return {entry.scheduled_time: entry for entry in ledger.entries(job, start, end)}


def missing_ticks(
    spec: ScheduleSpec, ledger: RunLedger, job: str, start: datetime, end: datetime, *, now: datetime
) -> list[datetime]:
    """Ticks the schedule expected in [start, end), up to `now` and outside a pause, that the ledger
    does not show as succeeded or skipped. A tick after `now` has not happened: it is never missing."""
    intervals = paused_intervals(state_history(ledger, job))
    expected = [t for t in due_ticks(spec, start, end, now=now) if not is_paused_at(intervals, t)]
    return _not_accounted_for(expected, _entries_by_time(ledger, job, start, end))


def due_ticks(spec: ScheduleSpec, start: datetime, end: datetime, *, now: datetime) -> list[datetime]:
    """The schedule's ticks in [start, end) that are due at `now`."""
    return [t for t in expected_ticks(spec, start, end) if t <= now]


def expected_ticks(spec: ScheduleSpec, start: datetime, end: datetime) -> list[datetime]:
    """The schedule's ticks in [start, end), or an OperationError saying why they cannot be known."""
    try:
        return spec.ticks_between(start, end)
    except ScheduleExpressionError as error:
        raise OperationError(str(error)) from None


def _not_accounted_for(expected: list[datetime], entries: dict[datetime, LedgerEntry]) -> list[datetime]:
    return [t for t in expected if t not in entries or entries[t].status not in (STATUS_SUCCEEDED, STATUS_SKIPPED)]


def job_status(template: Template, target: JobTarget, job: str, *, now: datetime, window: timedelta) -> JobStatus:
    schedule = template.jobs[job]
    start, end = now - window, now
    ledger = target.ledger()
    entries = _entries_by_time(ledger, job, start, end)
    history, intervals = job_pauses(target, job)
    spec = target.schedule_spec(job)
    expected = expected_ticks(spec, start, end)
    paused = [t for t in expected if is_paused_at(intervals, t)]
    failures = [e for e in entries.values() if e.status == STATUS_FAILED]
    fanned_out = _worth_showing(_fanned_out(template, target, job, start, end, now=now))
    failing = {tick.scheduled_time for tick in fanned_out if tick.failing}
    missing = _not_accounted_for([t for t in expected if t not in paused], entries)
    paused_since = history[-1] if intervals and intervals[-1][1] is None else None
    last_success_time = ledger.last_success_before(job, now + timedelta(seconds=1))
    last_success = None
    if last_success_time is not None:
        last_success = entries.get(last_success_time) or next(
            iter(ledger.entries(job, last_success_time, last_success_time + timedelta(seconds=1))), None
        )
    return JobStatus(
        job=job,
        function_id=schedule.function_id,
        expression=schedule.expression,
        window_start=start,
        window_end=end,
        last_success=last_success,
        last_failure=max(failures, key=lambda e: e.scheduled_time) if failures else None,
        # A paused job has no next tick: its schedule is disabled until someone resumes it.
        next_ticks=[] if paused_since is not None else spec.next_ticks(now, 3),
        expected=len(expected),
        missing=missing,
        skipped=[t for t in expected if t in entries and entries[t].status == STATUS_SKIPPED],
        paused=paused,
        paused_since=paused_since,
        fanned_out=fanned_out,
        overlap=declared_overlap(template, schedule.function_id),
        missing_states={t: _missing_state(entries.get(t), failing=t in failing) for t in missing},
    )


def _missing_state(entry: LedgerEntry | None, *, failing: bool) -> str:
    if entry is None:
        return "missed"
    if failing:
        return "failing"
    return "running" if entry.status == STATUS_STARTED else entry.status


def declared_overlap(template: Template, function_id: str) -> str | None:
    """The job's overlap policy as its code declares it (`ScheduledJob(..., overlap=...)`): its handler
    imported as Lambda imports it, never called. None for a function without the kit, or whose code is
    not in this checkout."""
    try:
        handler = LocalLambdaRuntime(template, endpoint="").handler(function_id)
    except (ImportError, TemplateError):
        return None  # its code is not here to read (status on a stack from another checkout)
    job = getattr(handler, "clockless_job", None)
    return None if job is None else str(job.overlap)


def _fanned_out(
    template: Template, target: JobTarget, job: str, start: datetime, end: datetime, *, now: datetime
) -> list[TickProgress]:
    """The window's fanned-out ticks, each partition's state read from its ledger record (the work
    dead-letter queue is not read: receiving a message to look at it raises its receive count)."""
    try:
        max_receives: int | None = work_queues(template, job).max_receive_count
    except OperationError:
        max_receives = None  # no work queue in this template: the records' states stand alone
    now_ms = int(now.timestamp() * 1000)
    return fanned_out_ticks(target.ledger(), job, start, end, now_ms=now_ms, max_receives=max_receives)


def failing_progress(
    template: Template, target: JobTarget, job: str, scheduled_time: datetime, *, now: datetime
) -> TickProgress | None:
    """The tick's progress when it fanned out and its partitions are failing (retrying or
    dead-lettered), read as `status` reads it; None otherwise."""
    ticks = _fanned_out(template, target, job, scheduled_time, scheduled_time + timedelta(seconds=1), now=now)
    return next((tick for tick in ticks if tick.failing), None)


def _worth_showing(ticks: list[TickProgress]) -> list[TickProgress]:
    """The ticks not (yet) succeeded, and the latest tick whatever it says."""
    shown = [tick for tick in ticks if tick.status != STATUS_SUCCEEDED]
    if ticks and ticks[-1] not in shown:
        shown.append(ticks[-1])
    return shown


# The status table's columns, in the terminal and on the HTML page alike.
COLUMNS = ("job", "last success", "last failure", "next ticks", "expected", "missing")
MAX_MISSING_SHOWN = 20


def failed_items_text(entry: LedgerEntry, shown: int = 3) -> str:
    """`3 items failed: t#a, t#b, t#c`: a tick's failed items, counted, the first few named; a
    fanned-out partition that failed every receive comes first (`1 partition failed: partition 3`)."""
    keys = [failure.key for failure in entry.failures[:shown]]
    partitions = sum(1 for failure in entry.failures if failure.reason == REASON_PARTITION)
    counted = [f"{partitions} partition{'s' if partitions > 1 else ''}"] if partitions else []
    if entry.failed_items or not partitions:
        counted.append(f"{entry.failed_items} items")
    more = ", …" if entry.failed_items + partitions > len(keys) else ""
    return f"{' and '.join(counted)} failed: {', '.join(keys)}{more}"


def has_failures(entry: LedgerEntry) -> bool:
    """Whether a tick has failed items or partitions to name."""
    return bool(entry.failed_items or entry.failures)


# The states a person must act on: always listed, however many other ticks are missing.
_NEEDS_A_PERSON = ("failed", "failing")


def _when(entry: LedgerEntry | None) -> str:
    return "-" if entry is None else format_scheduled_time(entry.scheduled_time)


def shown_missing(s: JobStatus, limit: int = MAX_MISSING_SHOWN) -> tuple[list[datetime], int]:
    """The missing ticks a table has room for, in time order, and how many it leaves out: every
    failed or failing tick, then the newest of the others (the oldest are the ones left out)."""
    urgent = {t for t in s.missing if s.missing_states.get(t) in _NEEDS_A_PERSON}
    others = [t for t in s.missing if t not in urgent]
    room = max(0, limit - len(urgent))
    kept = urgent | set(others[len(others) - room :] if room else [])
    return [t for t in s.missing if t in kept], len(s.missing) - len(kept)


def table_cells(s: JobStatus) -> list[list[str]]:
    """The job's row of the status table: per column, its lines of plain text."""
    shown, left_out = shown_missing(s)
    missing = [f"{format_scheduled_time(t)} {s.missing_states.get(t, 'missed')}" for t in shown]
    if left_out:
        missing.insert(0, f"… {left_out} older not shown (--json lists all)")
    paused = s.paused_since
    job = [s.job]
    if paused is not None:
        job += [f"paused since {format_scheduled_time(paused.at)}", f"by {paused.by}: {paused.reason}"]
    latest = s.latest_failure
    failure = ["-"] if latest is None else [f"{format_scheduled_time(latest[0])} {latest[1]}"]
    if latest is not None and latest[1] == "failed" and s.last_failure is not None and s.last_failure.error:
        failure.append(s.last_failure.error)
    elif latest is not None and latest[1] == "failing":
        failure.append("partitions failing: see below")
    for entry in (s.last_failure, s.last_success):
        if entry is not None and has_failures(entry):
            failure.append(f"{_when(entry)}: {failed_items_text(entry)}")
    return [
        job,
        [_when(s.last_success)],
        failure,
        ["none: paused"] if paused else [format_scheduled_time(t) for t in s.next_ticks],
        [str(s.expected)],
        [str(len(s.missing)), *missing],
    ]


def fit_lines(lines: list[str], width: int) -> list[str]:
    """`fanned_out_lines` on a terminal `width` wide: a tick's line wrapped under itself, a partition's
    (its last error may be long) in at most two lines, cut with `…` (`--json` and `--html` keep it whole)."""
    fitted = []
    for line in lines:
        indent = line[: len(line) - len(line.lstrip(" "))]
        wrapped = textwrap.wrap(
            line,
            width=max(width, 40),
            subsequent_indent=indent + "    ",
            max_lines=2 if indent else None,
            placeholder=" …",
            break_on_hyphens=False,
        )
        fitted += wrapped or [line]
    return fitted


def fanned_out_lines(s: JobStatus) -> list[str]:
    """Per fanned-out tick worth showing, one line of progress, then one per kind of partition trouble
    (partitions whose line says the same: one line with their count)."""
    lines = []
    for progress in s.fanned_out:
        when = f"{s.job} @ {format_scheduled_time(progress.scheduled_time)}"
        why = f" ({progress.error})" if progress.error else ""
        if progress.never_fanned_out:
            lines.append(
                f"{when} failed before fanning out: its coordinator raised{why}; "
                f"none of its {progress.partitions_total} partition(s) started"
            )
            continue
        lines.append(f"{when} fanned out, {progress.shown_status}: {progress.describe()}{why}")
        lines += [f"  {trouble}" for trouble in progress.grouped_troubles()]
    return lines
