"""What a simulation found about fanned-out ticks: their workers (invocations, redeliveries, the
faults they met, messages left in the dead-letter queue) and their ledger entries (status,
partitions, item counters) against the reference replay's, tick by tick."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clockless_tools.local.poller import OUTCOME_DONE
from clockless_tools.simulate.snapshot import Item, Snapshot, plain
from clockless_tools.simulate.workers import WORKER_FAULTS, WorkerRecord
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template

# What a fanned-out tick's ledger entry says that must match the reference replay's.
LEDGER_FIELDS: Final = ("status", "partitions_total", "partitions_done")
SUMMARY_COUNTERS: Final = ("found", "applied", "already_done", "failed")


@dataclass
class WorkerReport:
    """One job's workers in the simulation."""

    invocations: int = 0
    messages: int = 0
    redelivered: int = 0
    # invocations whose batch (or part of it) stayed on the queue: crashes, reported failures
    failed: int = 0
    # those failures by the fault their invocation met ("none": it met none). A crash fails its
    # invocation; of a duplicate's two concurrent invocations the one that finds the partition's lease
    # held fails, and that may be the one recorded: no other failure has a cause.
    failed_by_fault: dict[str, int] = field(default_factory=lambda: dict.fromkeys((*WORKER_FAULTS, "none"), 0))
    faults: dict[str, int] = field(default_factory=lambda: dict.fromkeys(WORKER_FAULTS, 0))
    responses_lost: int = 0
    dead_lettered: int = 0
    fanned_out_ticks: int = 0
    # ticks whose entry says succeeded with every partition done
    ticks_complete: int = 0
    # per tick: what its entry says in the simulation vs in the reference, where they differ
    ledger_differences: list[str] = field(default_factory=list)
    # Every ledger difference is in the item counters alone, and each counter's total over the job's
    # ticks is the reference's: the same items, counted on other ticks.
    counters_only: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "invocations": self.invocations,
            "messages": self.messages,
            "redelivered": self.redelivered,
            "failed": self.failed,
            "failed_by_fault": self.failed_by_fault,
            "faults": self.faults,
            "responses_lost": self.responses_lost,
            "dead_lettered": self.dead_lettered,
            "fanned_out_ticks": self.fanned_out_ticks,
            "ticks_complete": self.ticks_complete,
            "ledger_differences": self.ledger_differences,
        }


def fanned_out_entries(snapshot: Snapshot, template: Template, job: str) -> dict[str, dict[str, Any]]:
    """The job's tick entries that fanned out (they carry partitions_total), by scheduled time:
    status, partitions and the summary's item counters, as plain values."""
    names = LocalNames()
    ledgers = template.tables_of_kind("ledger")
    items: Iterable[Item] = snapshot.get(names.table_name(ledgers[0]), []) if ledgers else []
    entries = {}
    for item in items:
        if plain(item["job"]) != job or "partitions_total" not in item:
            continue
        entry = {name: plain(item[name]) if name in item else None for name in LEDGER_FIELDS}
        summary = json.loads(plain(item["summary"])) if "summary" in item else {}
        for counter in SUMMARY_COUNTERS:
            entry[counter] = summary.get(counter) if isinstance(summary, Mapping) else None
        entries[str(plain(item["scheduled_time"]))] = entry
    return entries


def worker_report(
    template: Template,
    job: str,
    records: Iterable[WorkerRecord],
    *,
    after: Snapshot,
    reference_after: Snapshot,
    dead_letters: Mapping[str, int],
    reference_dead_letters: Mapping[str, int],
) -> WorkerReport:
    report = WorkerReport()
    queues = set()
    for record in records:
        if record.job != job:
            continue
        queues.add(record.queue)
        report.invocations += 1
        report.messages += record.messages
        report.redelivered += record.redelivered
        if record.outcome != OUTCOME_DONE:
            report.failed += 1
            report.failed_by_fault[record.fault if record.fault is not None and record.fault_fired else "none"] += 1
        report.responses_lost += record.responses_lost
        if record.fault is not None and record.fault_fired:
            report.faults[record.fault] += 1
    report.dead_lettered = sum(dead_letters.get(queue, 0) for queue in queues)
    in_reference = sum(reference_dead_letters.get(queue, 0) for queue in queues)
    if report.dead_lettered != in_reference:
        report.ledger_differences.append(
            f"{job}: {report.dead_lettered} message(s) in the work dead-letter queue, {in_reference} in the reference's"
        )
    simulated = fanned_out_entries(after, template, job)
    reference = fanned_out_entries(reference_after, template, job)
    report.fanned_out_ticks = len(simulated)
    report.ticks_complete = sum(
        1
        for entry in simulated.values()
        if entry["status"] == "succeeded" and entry["partitions_done"] == entry["partitions_total"]
    )
    report.counters_only = report.dead_lettered == in_reference and _counters_only(simulated, reference)
    for scheduled_time in sorted(simulated.keys() | reference.keys()):
        mine, theirs = simulated.get(scheduled_time), reference.get(scheduled_time)
        if mine == theirs:
            continue
        if mine is None or theirs is None:
            where = "simulation" if mine is not None else "reference"
            report.ledger_differences.append(f"{job}@{scheduled_time}: fanned out only in the {where}")
            continue
        changes = "; ".join(f"{name} {mine[name]!r} vs {theirs[name]!r}" for name in mine if mine[name] != theirs[name])
        report.ledger_differences.append(f"{job}@{scheduled_time}: {changes} (simulation vs reference)")
    return report


def _counters_only(simulated: Mapping[str, Mapping[str, Any]], reference: Mapping[str, Mapping[str, Any]]) -> bool:
    """The entries differ (if at all) only in SUMMARY_COUNTERS, and each counter sums to the same."""
    if simulated.keys() != reference.keys():
        return False
    for scheduled_time, mine in simulated.items():
        theirs = reference[scheduled_time]
        if any(mine[name] != theirs[name] for name in mine if name not in SUMMARY_COUNTERS):
            return False
    return all(
        sum(entry.get(counter) or 0 for entry in simulated.values())
        == sum(entry.get(counter) or 0 for entry in reference.values())
        for counter in SUMMARY_COUNTERS
    )
