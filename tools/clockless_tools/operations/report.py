"""What a tick that `run-now` or `backfill` delivered did, in one line, as the operator asks it:
ran or not, and what the ledger says it did (the fanned-out tick's counters, or the job's summary)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from clockless import format_scheduled_time, parse_scheduled_time
from clockless.fanout.retry import redelivery_backoff_text
from clockless.ledger import STATUS_FAILED, STATUS_STARTED, LedgerEntry
from clockless_tools.operations.progress import TickProgress
from clockless_tools.operations.status import failing_progress
from clockless_tools.operations.targets import JobTarget, PartitionsFailing, one_line
from clockless_tools.template.model import Template

OUTCOME_EXECUTED = "executed"
OUTCOME_DUPLICATE = "duplicate"
# A tick delivered again whose partitions still fail: nothing ran again.
OUTCOME_STILL_FAILING = "still failing"
# A tick that ended failed (its items failed, or its function).
OUTCOME_FAILED = "failed"
# A started, fanned-out tick delivered again whose partitions neither run nor fail: lost messages.
OUTCOME_NOT_DONE = "not done"
# The share of a line one error may take: the line says what kind of failure, `status` says the rest.
FIRST_ERROR_LENGTH = 120


def verdict(response: Mapping[str, Any]) -> str:
    """`ran`, or why nothing ran (never `was a duplicate (duplicate)`)."""
    outcome = response.get("outcome")
    if outcome == OUTCOME_EXECUTED:
        return "ran"
    if outcome == OUTCOME_DUPLICATE:
        finished = response.get("finished_at")
        return "was already done" + (f" (finished {finished})" if finished else "") + "; nothing ran again"
    return f"did not run ({outcome})"


def describe_summary(summary: Mapping[str, Any] | None) -> str:
    """`found 12, applied 11, already done 1, failed 0`: each number or time of the summary."""
    if not summary:
        return "no summary"
    parts = []
    # The fan-out counters first, in the order the docs use; the rest as the job wrote them.
    first = [name for name in ("found", "applied", "already_done", "failed") if name in summary]
    for name, value in sorted(
        summary.items(), key=lambda item: (item[0] not in first, first.index(item[0]) if item[0] in first else 0)
    ):
        if isinstance(value, Mapping):
            parts += [f"{name.replace('_', ' ')} {inner}" for inner in (describe_summary(value),) if inner]
        elif value is not None and not isinstance(value, list):
            parts.append(f"{name.replace('_', ' ')} {value}")
    return ", ".join(parts) or "no summary"


def ledger_entry(target: JobTarget, job: str, scheduled_time: str) -> LedgerEntry | None:
    moment = parse_scheduled_time(scheduled_time)
    return next(iter(target.ledger().entries(job, moment, moment + timedelta(seconds=1))), None)


def what_it_did(target: JobTarget, job: str, response: Mapping[str, Any]) -> str:
    """The tick's ledger status and summary (a fanned-out tick's once its workers finished), or the
    function's own summary when the ledger has none yet."""
    scheduled_time = str(response.get("scheduled_time"))
    entry = ledger_entry(target, job, scheduled_time)
    if entry is None:
        return describe_summary(response.get("summary"))
    if entry.partitions_total is not None and entry.status == "started":
        return (
            f"fanned out to {entry.partitions_total} partition(s), {entry.partitions_done or 0} done so far; "
            "`clockless status` shows its progress"
        )
    return f"{entry.status}: {describe_summary(entry.summary or response.get('summary'))}"


def failing_line(job: str, failing: PartitionsFailing) -> str:
    """One line for a tick whose coordinator claimed and fanned it out and whose workers fail."""
    response = failing.response
    fan_out = (response.get("summary") or {}).get("fan_out") or {}
    partitions = fan_out.get("partitions", "its")
    why = f": {failing.error}" if failing.error else ""
    return (
        f"{job} @ {response.get('scheduled_time', '?')} was claimed and fanned out to {partitions} partition(s), "
        f"and its partitions are failing ({failing.function_id} failed on {failing.failed} message(s){why}); "
        f"they come back after the kit's backoff ({redelivery_backoff_text()}); `clockless status` shows each "
        "partition"
    )


def still_failing_line(job: str, progress: TickProgress) -> str:
    """One short line for a tick delivered again while its partitions fail: nothing ran again, and
    the ledger's `duplicate` must not read as `already done`. Each partition's error is `status`'s
    to show, not this line's: the first one, cut short, says what kind of failure it is."""
    troubles = [p for p in progress.partitions if p.last_error]
    first = f"; first error: {one_line(str(troubles[0].last_error), FIRST_ERROR_LENGTH)}" if troubles else ""
    return (
        f"{job} @ {format_scheduled_time(progress.scheduled_time)} is failing, not done: {progress.describe()}"
        f"{first}; delivering it again runs nothing: retrying partitions come back by themselves, dead-lettered "
        f"ones with `clockless work redrive {job}` once the cause is fixed; `clockless status` shows each partition"
    )


def failed_line(job: str, entry: LedgerEntry) -> str:
    """One line for a tick the ledger says ended `failed`."""
    why = f": {one_line(entry.error, FIRST_ERROR_LENGTH)}" if entry.error else ""
    redrive = (
        f"; its failed items: `clockless work redrive {job}` once the cause is fixed" if entry.partitions_total else ""
    )
    return (
        f"{job} @ {format_scheduled_time(entry.scheduled_time)} ended failed{why}{redrive}; "
        "`clockless status` shows the tick"
    )


def not_done_line(job: str, entry: LedgerEntry) -> str:
    """One line for a started, fanned-out tick delivered again whose partitions neither run nor fail
    where anything can see: its messages may be lost, and delivering it again sends none."""
    when = format_scheduled_time(entry.scheduled_time)
    done = entry.partitions_done or 0
    left = (entry.partitions_total or 0) - done
    return (
        f"{job} @ {when} is not done: fanned out to {entry.partitions_total} partition(s), {done} "
        f"done, none failing; delivering it again runs nothing; if its partition messages were lost (a purged work "
        f"queue), `clockless run-now {job} --at {when} --restart` sends the {left} not done again, each item still "
        "applied once"
    )


def tick_trouble(
    template: Template, target: JobTarget, job: str, response: Mapping[str, Any], *, now: datetime
) -> tuple[str, str] | None:
    """Why the tick a delivery named is not done, as (outcome, one line): it ended `failed`; or it was
    answered as a duplicate while started and fanned out, its partitions failing or stuck. None
    when it is done, or was handed on and runs (a deployed stack's workers)."""
    scheduled_time = str(response.get("scheduled_time"))
    entry = ledger_entry(target, job, scheduled_time)
    if entry is None:
        return None
    if entry.status == STATUS_FAILED:
        return OUTCOME_FAILED, failed_line(job, entry)
    if response.get("outcome") != OUTCOME_DUPLICATE or entry.status != STATUS_STARTED or not entry.partitions_total:
        return None
    progress = failing_progress(template, target, job, entry.scheduled_time, now=now)
    if progress is not None:
        return OUTCOME_STILL_FAILING, still_failing_line(job, progress)
    return OUTCOME_NOT_DONE, not_done_line(job, entry)
