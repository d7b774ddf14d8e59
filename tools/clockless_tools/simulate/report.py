"""What a simulation found: per job, ticks expected, deliveries by kind, executions, suppressed
duplicates and failures, and the effects in each table against the reference replay."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from clockless import OUTCOME_EXECUTED, format_scheduled_time
from clockless.overlap import OUTCOME_BUFFERED, OUTCOME_SKIPPED
from clockless_tools.local.event_sources import worker_functions
from clockless_tools.simulate.bad_rows import (
    BadRowsReport,
    dead_letter_keys,
    job_entries,
    judge_bad_rows,
    refused_for_items,
    settled_on_failed_items,
)
from clockless_tools.simulate.engine import (
    KINDS,
    OUTCOME_FAILED,
    SUPPRESSED,
    TOOK_EFFECT,
    DeliveryRecord,
)
from clockless_tools.simulate.fanout import WorkerReport, worker_report
from clockless_tools.simulate.plan import TickPlan
from clockless_tools.simulate.request import SimulationRequest
from clockless_tools.simulate.slow_night import judge_overlap, ledger_entries, overlap_skipped, started_by_release
from clockless_tools.simulate.snapshot import ItemDifference, Snapshot, TableEffects, compare_table, effects_between
from clockless_tools.simulate.tables import bookkeeping_tables, job_tables
from clockless_tools.simulate.workers import WorkerRecord
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template


def key_attributes(template: Template, logical_id: str) -> list[str]:
    schema = template.tables[logical_id].get("KeySchema") or []
    ordered = sorted(schema, key=lambda element: element.get("KeyType") != "HASH")
    return [str(element["AttributeName"]) for element in ordered]


@dataclass
class JobReport:
    job: str
    function_id: str
    expression: str
    tables: list[str]
    ticks_expected: int = 0
    # Its ticks in the range when the run sampled them (`make run`'s default day); else ticks_expected.
    ticks_scheduled: int = 0
    ticks_dropped: list[str] = field(default_factory=list)
    deliveries: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    executions: int = 0
    duplicates_suppressed: int = 0
    failures: int = 0
    failures_injected: int = 0
    failures_after_writes: int = 0
    failures_retried: int = 0
    responses_lost: int = 0
    ticks_missed: list[str] = field(default_factory=list)
    effects: dict[str, TableEffects] = field(default_factory=dict)
    reference_effects: dict[str, TableEffects] = field(default_factory=dict)
    differences: list[ItemDifference] = field(default_factory=list)
    reference_failures: list[str] = field(default_factory=list)
    workers: WorkerReport = field(default_factory=WorkerReport)
    has_demo: bool = True
    # Items in the job's tables before the first tick (what its demo.py seeded)
    seeded_items: int = 0
    # clockless.overlap: the policy the run followed, the ticks it held back, what the ledger contradicts
    overlap: str | None = None
    ticks_skipped: list[str] = field(default_factory=list)
    ticks_buffered: list[str] = field(default_factory=list)
    overlap_problems: list[str] = field(default_factory=list)
    overlap_skipped_times: set[str] = field(default_factory=set)
    started_from_buffer: set[str] = field(default_factory=set)
    # A night with bad rows: what became of the rows its demo planted (None: not such a night)
    bad_rows: BadRowsReport | None = None

    @property
    def no_work(self) -> bool:
        """Ticks were delivered and even the reference replay (each tick once) changed nothing in the
        job's tables: a verdict over zero effects would read the same as a real one, so there is none.
        A job with no table of its own (tick-reaper, whose writes are the ledger's settled ticks) has
        none to compare: its verdict is its ticks', each once."""
        return (
            bool(self.tables)
            and self.ticks_delivered > 0
            and self.reference_effects_total == 0
            and not self.reference_failures
        )

    @property
    def no_work_reason(self) -> str:
        if not self.has_demo:
            where = "its package has no demo.py: no data"
        elif not self.seeded_items:
            where = f"the data is empty: its demo.py wrote no item to {', '.join(self.tables)}"
        else:
            where = (
                f"the logic did nothing: its demo.py seeded {self.seeded_items} items in {', '.join(self.tables)} and "
                "no tick changed one (what its ticks find due, or what applying one writes)"
            )
        return f"no work seeded for {self.job}: {self.ticks_delivered} ticks delivered, no effect ({where})"

    @property
    def counts_elsewhere(self) -> bool:
        """Its effects are identical to the reference's item by item and only its ledger's per-tick
        counters differ, with the same totals: items due to more than one tick were applied by another
        tick than in the reference (docs/simulation.md#what-the-verdict-means)."""
        return (
            not self.differences
            and not self.ticks_missed
            and not self.reference_failures
            and not self.overlap_problems
            and not (self.bad_rows is not None and self.bad_rows.problems)
            and self.workers.counters_only
        )

    @property
    def proved(self) -> bool:
        """Exactly once, or its ledger counts alone moved between ticks: every item's effect is the
        reference's and the totals match, so nothing was done twice or left undone."""
        return self.exactly_once or self.counts_elsewhere

    @property
    def faults_injected(self) -> int:
        return self.failures_injected + self.responses_lost + sum(self.workers.faults.values())

    @property
    def items_twice(self) -> int:
        """Items the simulation changed beyond what each tick once does (created, deleted or changed
        where the reference left the item as it was, or changed it otherwise)."""
        return sum(1 for d in self.differences if not d.lost)

    @property
    def items_lost(self) -> int:
        """Items each tick once would have changed (created, deleted, updated) that the simulation
        left as they were before the run."""
        return sum(1 for d in self.differences if d.lost)

    @property
    def sampled(self) -> bool:
        return self.ticks_scheduled > self.ticks_expected

    @property
    def ticks_delivered(self) -> int:
        return self.ticks_expected - len(self.ticks_dropped)

    @property
    def effects_total(self) -> int:
        return sum(effects.total for effects in self.effects.values())

    @property
    def reference_effects_total(self) -> int:
        return sum(effects.total for effects in self.reference_effects.values())

    @property
    def exactly_once(self) -> bool:
        return (
            not self.ticks_missed
            and not self.differences
            and not self.reference_failures
            and not self.workers.ledger_differences
            and not self.overlap_problems
            and not (self.bad_rows is not None and self.bad_rows.problems)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "function": self.function_id,
            "schedule": self.expression,
            "tables": self.tables,
            "ticks_expected": self.ticks_expected,
            "ticks_scheduled": max(self.ticks_scheduled, self.ticks_expected),
            "ticks_dropped": self.ticks_dropped,
            "deliveries": self.deliveries,
            "deliveries_by_kind": self.by_kind,
            "executions": self.executions,
            "duplicates_suppressed": self.duplicates_suppressed,
            "failures": self.failures,
            "failures_injected": self.failures_injected,
            "failures_after_writes": self.failures_after_writes,
            "failures_retried": self.failures_retried,
            "responses_lost": self.responses_lost,
            "ticks_missed": self.ticks_missed,
            "effects": {table: asdict(effects) for table, effects in self.effects.items()},
            "reference_effects": {table: asdict(effects) for table, effects in self.reference_effects.items()},
            "differences": [difference.as_dict() for difference in self.differences],
            "reference_failures": self.reference_failures,
            "workers": self.workers.as_dict(),
            "overlap": self.overlap,
            "ticks_skipped": self.ticks_skipped,
            "ticks_buffered": self.ticks_buffered,
            "ticks_started_from_buffer": sorted(self.started_from_buffer),
            "overlap_problems": self.overlap_problems,
            "bad_rows": None if self.bad_rows is None else self.bad_rows.as_dict(),
            "no_work": self.no_work,
            "exactly_once": self.exactly_once,
            "counts_elsewhere": not self.exactly_once and self.counts_elsewhere,
        }


@dataclass
class SimulationReport:
    start: datetime
    end: datetime
    seed: int
    endpoint: str | None
    seeded: str | None
    jobs: list[JobReport]
    compared_tables: list[str]
    differences: list[ItemDifference]

    @property
    def ok(self) -> bool:
        return not self.differences and all(job.proved and not job.no_work for job in self.jobs)

    @property
    def counts_moved(self) -> list[str]:
        """The jobs proved with their ledger counts on other ticks than the reference's."""
        return [job.job for job in self.jobs if job.ticks_delivered and not job.exactly_once and job.counts_elsewhere]

    def notes(self) -> list[str]:
        """What a proof holds beyond its sentence: the jobs whose ticks were sampled, and those whose
        per-tick counts are not a tick's own work."""
        notes = [
            f"note: {job.job}: {job.ticks_expected} of its {job.ticks_scheduled} ticks delivered (sampled: each "
            "hour's first and a run of consecutive ones from the last hour, `make run`'s budget per job); "
            "`make run FULL=1` or a FROM= range delivers every tick (docs/simulation.md#sampled-ticks)"
            for job in self.jobs
            if job.sampled
        ]
        if not self.counts_moved:
            return notes
        return [
            *notes,
            f"note: {', '.join(self.counts_moved)}: effects identical item by item, counts attributed to other "
            "ticks: an item due to more than one tick was applied once, by another tick than in the reference "
            "(a late or repeated delivery ran first), so a tick's ledger counts are what that tick did, not its "
            "own window's items; where they must be, make each tick cover only its own window "
            "(docs/simulation.md#what-the-verdict-means)",
        ]

    def proved(self) -> str:
        """One sentence of what the run proved (or did not), every number counted from the run."""
        jobs = [job for job in self.jobs if job.ticks_delivered]
        ticks = sum(job.ticks_delivered for job in jobs)
        applied = sum(job.effects_total for job in jobs)
        twice = sum(job.items_twice for job in jobs) + sum(1 for d in self.differences if not d.lost)
        lost = sum(job.items_lost for job in jobs) + sum(1 for d in self.differences if d.lost)
        faults = sum(job.faults_injected for job in jobs)
        counts = f"{applied} items applied, {twice} twice, {lost} lost, under {faults} injected faults"
        judged = [job.bad_rows for job in jobs if job.bad_rows is not None]
        if judged:
            named = sum(len(rows.in_ledger) for rows in judged)
            planted = sum(len(rows.planted or []) for rows in judged)
            settled = sum(rows.ticks_failed + rows.ticks_tolerated for rows in judged)
            counts += f"; {named} of {planted} bad rows reported, {settled} ticks that met them settled"
        of = f"{ticks} ticks of {len(jobs)} job{'s' if len(jobs) != 1 else ''}"
        sampled = [f"{job.job} {job.ticks_expected} of {job.ticks_scheduled}" for job in jobs if job.sampled]
        of += f" (sampled: {', '.join(sampled)})" if sampled else ""
        if self.ok:
            return f"{of} took effect exactly once: {counts}"
        unproved = [job.job for job in jobs if job.no_work]
        failed = [job.job for job in jobs if not job.proved]
        reasons = [f"effects differ: {', '.join(failed)}"] if failed or self.differences else []
        reasons += [f"no work seeded for {', '.join(unproved)}"] if unproved else []
        return f"{of} NOT proved ({'; '.join(reasons) or 'see above'}): {counts}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": format_scheduled_time(self.start),
            "to": format_scheduled_time(self.end),
            "seed": self.seed,
            "endpoint": self.endpoint,
            "seeded": self.seeded,
            "compared_tables": self.compared_tables,
            "jobs": [job.as_dict() for job in self.jobs],
            "differences": [difference.as_dict() for difference in self.differences],
            "ok": self.ok,
            "proved": self.proved(),
            "notes": self.notes(),
        }


def build_report(
    request: SimulationRequest,
    ticks: Mapping[str, list[datetime]],
    plans: list[TickPlan],
    records: list[DeliveryRecord],
    reference_records: list[DeliveryRecord],
    *,
    before: Snapshot,
    after: Snapshot,
    reference_after: Snapshot,
    seeded: str | None,
    without_demo: Collection[str] = (),
    workers: Collection[WorkerRecord] = (),
    dead_letters: Mapping[str, int] | None = None,
    reference_dead_letters: Mapping[str, int] | None = None,
    overlap: Mapping[str, str] | None = None,
    bad_rows: Mapping[str, Sequence[str] | None] | None = None,
    dead_letter_bodies: Sequence[str] = (),
) -> SimulationReport:
    """Counters per job from the deliveries; effects and differences from the tables."""
    template = request.template
    names = LocalNames()
    compared = sorted(template.tables.keys() - bookkeeping_tables(template))
    differences: dict[str, list[ItemDifference]] = {}
    for table in compared:
        keys = key_attributes(template, table)
        name = names.table_name(table)
        differences[table] = compare_table(
            name, after.get(name, []), reference_after.get(name, []), keys, before=before.get(name, [])
        )
    owned: set[str] = set()
    jobs = []
    scheduled = request.scheduled() if request.sample else {}
    for job, times in ticks.items():
        schedule = template.jobs[job]
        tables = job_tables(template, schedule.function_id)
        owned.update(tables)
        report = JobReport(job, schedule.function_id, schedule.expression, tables, ticks_expected=len(times))
        report.ticks_scheduled = scheduled.get(job, len(times))
        report.has_demo = job not in without_demo
        report.seeded_items = sum(len(before.get(names.table_name(table), [])) for table in tables)
        report.ticks_dropped = sorted(format_scheduled_time(t) for j, t in request.drops if j == job)
        _count_deliveries(report, [r for r in records if r.job == job])
        took_effect = {r.tick_key for r in records if r.job == job and r.outcome in TOOK_EFFECT}
        _judge_overlap(report, records, after, template)
        # Held back by the overlap policy is not missed: skipped on the record, or run from the buffer.
        took_effect |= {f"{job}@{t}" for t in report.ticks_skipped if t in report.overlap_skipped_times}
        took_effect |= {f"{job}@{t}" for t in report.started_from_buffer}
        if bad_rows is not None:
            took_effect |= settled_on_failed_items(job_entries(after, template, job), job)
        report.ticks_missed = [plan.key for plan in plans if plan.job == job and plan.key not in took_effect]
        report.overlap = (overlap or {}).get(job)
        report.workers = worker_report(
            template,
            job,
            workers,
            after=after,
            reference_after=reference_after,
            dead_letters=dead_letters or {},
            reference_dead_letters=reference_dead_letters or {},
        )
        report.reference_failures = [
            f"{r.tick_key}: {r.error}"
            for r in reference_records
            if r.job == job
            and r.outcome == OUTCOME_FAILED
            and not (bad_rows is not None and refused_for_items(r.error))
        ]
        for table in tables:
            keys, name = key_attributes(template, table), names.table_name(table)
            report.effects[table] = effects_between(before.get(name, []), after.get(name, []), keys)
            report.reference_effects[table] = effects_between(before.get(name, []), reference_after.get(name, []), keys)
            report.differences.extend(differences[table])
        if bad_rows is not None and tables:  # a job with no table of its own has no row to plant
            report.bad_rows = judge_bad_rows(
                job,
                bad_rows.get(job),
                job_entries(after, template, job),
                dead_letter_keys(dead_letter_bodies, job),
                fans_out=bool(worker_functions(template, schedule.function_id)),
                ticks_delivered=report.ticks_delivered,
            )
        jobs.append(report)
    unowned = [d for table in compared if table not in owned for d in differences[table]]
    return SimulationReport(
        start=request.start,
        end=request.end,
        seed=request.seed,
        endpoint=request.endpoint,
        seeded=seeded,
        jobs=jobs,
        compared_tables=compared,
        differences=unowned,
    )


def _count_deliveries(report: JobReport, records: Collection[DeliveryRecord]) -> None:
    kinds = Counter(record.kind for record in records)
    report.by_kind = {kind: kinds[kind] for kind in KINDS}
    report.deliveries = len(records)
    report.executions = sum(1 for r in records if r.outcome == OUTCOME_EXECUTED)
    report.duplicates_suppressed = sum(1 for r in records if r.outcome in SUPPRESSED)
    report.failures = sum(1 for r in records if r.outcome == OUTCOME_FAILED)
    report.failures_injected = sum(1 for r in records if r.outcome == OUTCOME_FAILED and r.injected)
    report.failures_after_writes = sum(1 for r in records if r.outcome == OUTCOME_FAILED and r.writes_done > 0)
    report.failures_retried = sum(1 for r in records if r.outcome == OUTCOME_FAILED and r.retried)
    report.responses_lost = sum(r.responses_lost for r in records)


def _judge_overlap(report: JobReport, records: Collection[DeliveryRecord], after: Snapshot, template: Template) -> None:
    """The ticks the job's overlap policy held back, judged against its ledger (slow_night)."""
    mine = [r for r in records if r.job == report.job]
    report.ticks_skipped = sorted({r.scheduled_time for r in mine if r.outcome == OUTCOME_SKIPPED})
    report.ticks_buffered = sorted({r.scheduled_time for r in mine if r.outcome == OUTCOME_BUFFERED})
    if not report.ticks_skipped and not report.ticks_buffered:
        return
    entries = ledger_entries(after, template, report.job)
    report.overlap_problems = judge_overlap(report.job, report.ticks_skipped, report.ticks_buffered, entries)
    report.overlap_skipped_times = overlap_skipped(entries)
    report.started_from_buffer = started_by_release(entries) & set(report.ticks_buffered)
