"""What a tick that `run-now` or `backfill` delivered did, in one line, as the operator asks it:
ran or not, and what the ledger says it did (the fanned-out tick's counters, or the job's summary)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from clockless import format_scheduled_time, parse_scheduled_time
from clockless.ledger import LedgerEntry
from clockless_tools.operations.progress import TickProgress
from clockless_tools.operations.targets import JobTarget, PartitionsFailing

OUTCOME_EXECUTED = "executed"
OUTCOME_DUPLICATE = "duplicate"


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
        "they are retried after the work queue's visibility timeout, `clockless status` shows each partition"
    )


def still_failing_line(job: str, progress: TickProgress) -> str:
    """One line for a tick delivered again while its partitions fail: nothing ran again, and the
    ledger's `duplicate` must not read as `already done`."""
    troubles = "; ".join(progress.troubles())
    return (
        f"{job} @ {format_scheduled_time(progress.scheduled_time)} is failing, not done: its coordinator fanned it "
        f"out and {progress.describe()} ({troubles}); delivering it again runs nothing. Retrying partitions come "
        f"back after the work queue's visibility timeout; dead-lettered ones: `clockless work redrive {job}` once "
        "the cause is fixed; `clockless status` shows each partition"
    )
