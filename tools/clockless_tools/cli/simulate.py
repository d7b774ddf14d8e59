"""`clockless simulate` (`make run`): every schedule replayed over a range in simulated
time, each tick delivered at least once, checked against a replay that delivers each tick once."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from clockless_tools.cli.common import (
    RUN_LOCALLY,
    TemplateOption,
    fail,
    flag,
    print_function_log,
    shown,
    stderr,
    stdout,
)
from clockless_tools.cli.progress import StepProgress
from clockless_tools.local.seed import SeedPlan
from clockless_tools.simulate.bad_rows import BadRowsReport
from clockless_tools.simulate.report import JobReport, SimulationReport
from clockless_tools.simulate.request import (
    DEFAULT_LOG,
    SimulationError,
    SimulationInputError,
    SimulationRequest,
    check_endpoint,
    last_whole_hour,
    load_template_for_simulation,
    parse_drop,
    parse_utc,
)
from clockless_tools.simulate.run import run_simulation
from clockless_tools.simulate.snapshot import TableEffects
from clockless_tools.simulate.workers import FAULT_CRASH, FAULT_DUPLICATE, FAULT_LOST_ANSWER, FAULT_THROTTLED
from clockless_tools.template.loader import DEFAULT_TEMPLATE

# `make run`: a day of every schedule answers in seconds; `--full` (`make run FULL=1`, what CI runs)
# is the two days it used to be. Every fault class and the item-by-item judgement are the same.
DEFAULT_SPAN = timedelta(hours=24)
FULL_SPAN = timedelta(hours=48)
MAX_LISTED = 12

app = typer.Typer()


@app.command(rich_help_panel=RUN_LOCALLY)
def simulate(
    start: Annotated[
        str | None,
        typer.Option("--from", help="UTC start, e.g. 2026-11-27T00:00:00Z (default: --to minus 24 h, or 48 h --full)."),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option("--to", help="UTC end, exclusive (default: the last whole hour). E.g. --to 2026-11-29T12:00:00Z"),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seeds the demo data and the delivery plan: same seed, same report. E.g. --seed 42")
    ] = 7,
    drop: Annotated[
        list[str] | None,
        typer.Option(
            help="JOB@UTC_TIME: never deliver that tick (a scheduler outage). Repeatable. "
            "E.g. --drop session-cleanup@2026-11-29T03:00:00Z"
        ),
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="Run the simulation on this running DynamoDB (`clockless local up` + `local seed`). E.g. --endpoint http://127.0.0.1:8765"
        ),
    ] = None,
    tenants: Annotated[
        int, typer.Option(min=1, help="Tenants in the demo data (40 programs, 60 sessions each). E.g. --tenants 5")
    ] = 3,
    capacity: Annotated[
        str | None,
        typer.Option(
            help="Enforce DynamoDB's throughput on the embedded DynamoDB: cold (a new on-demand table, "
            "4,000 write and 12,000 read units/s per table and index) or warm; keys hashed onto physical "
            "partitions of 1,000 write and 3,000 read units/s each. E.g. --capacity cold"
        ),
    ] = None,
    scale: Annotated[
        float, typer.Option(help="Divide every throughput limit by this (with --capacity). E.g. --scale 200")
    ] = 1.0,
    slow_night: Annotated[
        bool,
        typer.Option(
            "--slow-night",
            help="The fanned-out jobs' workers lag 2.5 tick intervals, so later ticks arrive while earlier "
            "ones still run; each job's overlap policy is judged (`make run SLOW_NIGHT=1`).",
        ),
    ] = False,
    overlap: Annotated[
        str | None,
        typer.Option(
            help="With --slow-night: every job follows this overlap policy instead of its own "
            "(run-both, skip, buffer; buffer only where workers start it). E.g. --overlap skip"
        ),
    ] = None,
    bad_rows: Annotated[
        bool,
        typer.Option(
            "--bad-rows",
            help="Every job's demo plants rows its ticks cannot use (its bad_rows hook) among the good ones; "
            "judged: good items once, every bad row named in the ledger and the work DLQ, every tick settled "
            "(`make run BAD_ROWS=1`).",
        ),
    ] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Two days instead of one, every tick (the default day samples a job ticking more often than "
            "hourly: at most 29 ticks; docs/simulation.md). What CI runs; `make run FULL=1`.",
        ),
    ] = False,
    keys_per_partition: Annotated[
        int | None,
        typer.Option(
            help="Index keys each partition of a fanned-out job reads in the replays (default 1; the jobs' own "
            "16 multiply the night's Queries, docs/simulation.md#index-keys; not with --endpoint). "
            "E.g. --keys-per-partition 16",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    template: TemplateOption = DEFAULT_TEMPLATE,
) -> None:
    """Replay every schedule over a range in simulated time, each tick delivered at least once
    (duplicates, concurrent copies, failures and retries, late deliveries), and check that every
    tick took effect exactly once against a replay that delivers each tick once."""
    started = time.monotonic()
    try:
        tpl = load_template_for_simulation(template)
        until = parse_utc(end, option=flag("--to")) if end else last_whole_hour()
        if full and start:
            raise SimulationInputError("--full sets how far back --from lies; give one of --full and --from")
        since = parse_utc(start, option=flag("--from")) if start else until - (FULL_SPAN if full else DEFAULT_SPAN)
        request = SimulationRequest(
            template=tpl,
            start=since,
            end=until,
            seed=seed,
            drops=tuple(parse_drop(text) for text in drop or []),
            endpoint=check_endpoint(endpoint) if endpoint else None,
            seed_plan=SeedPlan(tenants=tenants),
            log_path=DEFAULT_LOG,
            capacity=capacity,
            scale=scale,
            slow_night=slow_night,
            overlap=overlap,
            bad_rows=bad_rows,
            # `make run`'s default day: a sub-hourly job's ticks sampled (--full or --from: every tick)
            sample=not full and not start,
            keys_per_partition=keys_per_partition,
        )
        request.validate()
    except SimulationInputError as error:
        raise fail(str(error)) from None

    steps = StepProgress(stderr)
    with steps.shown():
        steps.note(f"simulating {_range(request)} of {', '.join(tpl.jobs)} (seed {seed})")
        try:
            report = run_simulation(request, progress=steps.update, note=steps.note)
        except SimulationError as error:
            stderr.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=1) from None
    elapsed = time.monotonic() - started
    log = shown(request.log_path)
    if as_json:
        print(json.dumps({**report.as_dict(), "seconds": round(elapsed, 2), "function_log": log}, indent=2))
    else:
        render_report(report)
        print_function_log(log, note=f"   ({elapsed:.1f} s)")
    if report.ok:
        if not as_json:
            stdout.print(report.proved(), highlight=False, soft_wrap=True)
            _notes(report)
        return
    for job in report.jobs:
        if job.no_work:
            stderr.print(f"[bold red]{escape(job.no_work_reason)}[/]", highlight=False, soft_wrap=True)
    stderr.print(f"[bold red]{escape(report.proved())}[/]", highlight=False, soft_wrap=True)
    if not as_json:
        _notes(report)
    raise typer.Exit(code=1)


def _notes(report: SimulationReport) -> None:
    for note in report.notes():
        stdout.print(f"[yellow]{escape(note)}[/]", highlight=False, soft_wrap=True)


def _range(request: SimulationRequest) -> str:
    hours = (request.end - request.start) / timedelta(hours=1)
    return f"{request.start:%Y-%m-%dT%H:%MZ} to {request.end:%Y-%m-%dT%H:%MZ} ({hours:g} h)"


def _effects(effects: Mapping[str, TableEffects]) -> str:
    """`+created ~updated -deleted` per table, one line each."""
    lines = []
    for table, effect in effects.items():
        counts = [
            f"{sign}{n}" for sign, n in (("+", effect.created), ("~", effect.updated), ("-", effect.deleted)) if n
        ]
        lines.append(f"{table} {' '.join(counts) or '0'}")
    return "\n".join(lines) or "-"


def _exactly_once(job: JobReport) -> str:
    if job.no_work:
        return "[bold red]no work seeded[/]"
    # Proved, its per-tick counts on other ticks than the reference's: the note after the verdict says what
    return "[yellow]yes, counts moved[/]" if not job.exactly_once and job.proved else _yes(job.exactly_once)


def _yes(value: bool) -> str:
    return "[green]yes[/]" if value else "[bold red]NO[/]"


def render_report(report: SimulationReport) -> None:
    """The report as a table per job, then every finding by name."""
    table = Table(title=f"clockless simulate: {report.start:%Y-%m-%d %H:%M} to {report.end:%Y-%m-%d %H:%M} UTC")
    table.add_column("")
    for job in report.jobs:
        table.add_column(job.job, justify="right")

    def row(label: str, cell: Callable[[JobReport], str]) -> None:
        table.add_row(label, *(cell(job) for job in report.jobs))

    row("schedule (UTC)", lambda j: j.expression)
    row("ticks expected", lambda j: f"{j.ticks_expected}{f' of {j.ticks_scheduled}' if j.sampled else ''}")
    row("  dropped (by request)", lambda j: str(len(j.ticks_dropped)))
    row("deliveries", lambda j: str(j.deliveries))
    row("  first attempts", lambda j: str(j.by_kind["tick"]))
    row("  retries after failures", lambda j: str(j.by_kind["retry"]))
    row("  concurrent copies", lambda j: str(j.by_kind["concurrent"]))
    row("  same event again", lambda j: str(j.by_kind["redelivery"]))
    row("  late, after next tick", lambda j: str(j.by_kind["late"]))
    row("executions", lambda j: str(j.executions))
    row("duplicates suppressed", lambda j: str(j.duplicates_suppressed))
    row("failures (injected)", lambda j: f"{j.failures} ({j.failures_injected})")
    row("  after some writes", lambda j: str(j.failures_after_writes))
    row("  retried", lambda j: str(j.failures_retried))
    row("answers lost, resent by the SDK", lambda j: str(j.responses_lost))
    row("ticks missed", lambda j: str(len(j.ticks_missed)))
    if any(job.overlap is not None and job.overlap != "run-both" for job in report.jobs):
        _overlap_rows(row)
    if any(job.workers.invocations or job.workers.fanned_out_ticks for job in report.jobs):
        _worker_rows(row)
    if any(job.bad_rows is not None for job in report.jobs):
        _bad_row_rows(row)
    row("effects in the tables", lambda j: _effects(j.effects))
    row("  each tick once", lambda j: _effects(j.reference_effects))
    row("  identical, item by item", lambda j: _yes(not j.differences))
    row("exactly once", _exactly_once)
    stdout.print(table)
    stdout.print("effects: + items created, ~ updated, - deleted", highlight=False)
    if report.seeded:
        stdout.print(f"seeded: {report.seeded}", highlight=False)
    stdout.print(f"compared item by item: {', '.join(report.compared_tables)}", highlight=False)
    for job in report.jobs:
        _list(f"{job.job}: dropped (by request)", job.ticks_dropped, style="dim")
        _list(f"{job.job}: ticks that never took effect", job.ticks_missed)
        _list(f"{job.job}: the reference replay failed", job.reference_failures)
        _list(f"{job.job}: effects that differ", [d.describe() for d in job.differences])
        _list(f"{job.job}: fanned-out ticks whose ledger differs", job.workers.ledger_differences)
        _list(f"{job.job}: overlap the ledger contradicts", job.overlap_problems)
        _list(f"{job.job}: bad rows not reported, ticks not settled", job.bad_rows.problems if job.bad_rows else [])
    _list("tables no job names: effects that differ", [d.describe() for d in report.differences])


def _overlap_rows(row: Callable[[str, Callable[[JobReport], str]], None]) -> None:
    """Ticks held back by the job's overlap policy (clockless.overlap), judged against its ledger."""
    row("overlap policy", lambda j: j.overlap or "-")
    row("  skipped, reason recorded", lambda j: str(len(j.ticks_skipped)))
    row("  buffered, run after the earlier", lambda j: f"{len(j.started_from_buffer)}/{len(j.ticks_buffered)}")
    row("  as the ledger says", lambda j: _yes(not j.overlap_problems))


def _worker_rows(row: Callable[[str, Callable[[JobReport], str]], None]) -> None:
    """The fanned-out ticks' workers (SQS event source mappings drained in simulated time)."""
    row("fanned-out ticks complete", lambda j: f"{j.workers.ticks_complete}/{j.workers.fanned_out_ticks}")
    row("worker invocations", lambda j: str(j.workers.invocations))
    row("  messages (redelivered)", lambda j: f"{j.workers.messages} ({j.workers.redelivered})")
    row("  failed, message back later", lambda j: str(j.workers.failed))
    row("  crashed mid-partition", lambda j: str(j.workers.faults[FAULT_CRASH]))
    row("  answer lost, resent", lambda j: str(j.workers.faults[FAULT_LOST_ANSWER]))
    # Throttled past botocore's retries; the kit waits it out within the invocation's budget.
    row("  throttled, waited out", lambda j: str(j.workers.faults[FAULT_THROTTLED]))
    row("  message handed out twice", lambda j: str(j.workers.faults[FAULT_DUPLICATE]))
    row("  in the dead-letter queue", lambda j: str(j.workers.dead_lettered))
    row("  ledger counters as reference", lambda j: _yes(not j.workers.ledger_differences))


def _bad_row_rows(row: Callable[[str, Callable[[JobReport], str]], None]) -> None:
    """The rows each job's demo planted (clockless_tools.simulate.bad_rows), where they were reported."""

    def counted(found: Callable[[BadRowsReport], int]) -> Callable[[JobReport], str]:
        def cell(job: JobReport) -> str:
            rows = job.bad_rows
            if rows is None or rows.planted is None:
                return "[bold red]none planted[/]" if rows is not None else "-"
            return f"{found(rows)}/{len(rows.planted)}"

        return cell

    row("bad rows planted", lambda j: "-" if j.bad_rows is None else str(len(j.bad_rows.planted or [])))
    row("  named in the ledger", counted(lambda r: len(r.in_ledger)))
    row(
        "  in the work DLQ",
        lambda j: counted(lambda r: len(r.in_dead_letters))(j) if j.bad_rows and j.bad_rows.fans_out else "-",
    )
    row(
        "  ticks failed (tolerated)",
        lambda j: "-" if j.bad_rows is None else f"{j.bad_rows.ticks_failed} ({j.bad_rows.ticks_tolerated})",
    )
    row("  ticks left started", lambda j: "-" if j.bad_rows is None else str(len(j.bad_rows.ticks_started)))
    row("  reported, settled", lambda j: "-" if j.bad_rows is None else _yes(not j.bad_rows.problems))


def _list(title: str, lines: list[str], *, style: str = "bold red") -> None:
    if not lines:
        return
    stdout.print(f"[{style}]{escape(title)}[/] ({len(lines)})", highlight=False)
    for line in lines[:MAX_LISTED]:
        stdout.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    if len(lines) > MAX_LISTED:
        stdout.print(f"  ... and {len(lines) - MAX_LISTED} more (see --json)", highlight=False)
