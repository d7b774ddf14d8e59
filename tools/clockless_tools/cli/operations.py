"""`clockless status`, `clockless backfill`, `clockless run-now`: against the local runtime
(default: the running `clockless local up`) or a deployed stack (`--stack`, `--region`, `--profile`)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from clockless import format_scheduled_time
from clockless_tools.cli.common import (
    EXIT_FOUND,
    EXIT_PARTITIONS_FAILING,
    OPERATE,
    JsonOption,
    function_log,
    function_output,
    line_stderr,
    line_stdout,
    parse_time,
    shown,
    stdout,
    utc,
)
from clockless_tools.cli.target import TargetOptions, acting_on, target_options
from clockless_tools.operations.backfill import OUTCOME_PARTITIONS_FAILING, BackfillPolicy, backfill
from clockless_tools.operations.grid import job_grid, render_text
from clockless_tools.operations.page import StatusPage, render_page
from clockless_tools.operations.report import failing_line, verdict, what_it_did
from clockless_tools.operations.run_now import run_now
from clockless_tools.operations.spans import format_span
from clockless_tools.operations.status import COLUMNS, fanned_out_lines, job_status, table_cells
from clockless_tools.operations.targets import LocalTarget, PartitionsFailing

app = typer.Typer()

VerboseOption = Annotated[
    bool, typer.Option("--verbose", help="Stream the functions' logs to stderr instead of the --log file.")
]


_LOG_HELP = "Where the functions' logs and metrics go on the local runtime (appended). E.g. --log tick.log"
LogOption = Annotated[Path, typer.Option("--log", help=_LOG_HELP)]
BACKFILL_LOG, RUN_NOW_LOG = function_log("backfill"), function_log("run-now")


JobArgument = Annotated[str, typer.Argument(help='The job name (the schedule Input\'s "job"). E.g. session-cleanup')]


@app.command("status", rich_help_panel=OPERATE)
@target_options
def status(
    window_days: Annotated[
        float, typer.Option("--window-days", min=0.01, help="How far back to look, in days. E.g. --window-days 2")
    ] = 7,
    as_json: JsonOption = False,
    html_file: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write a self-contained HTML page (the table, the fanned-out ticks and the grids) to attach "
            "to an incident. E.g. --html status.html",
        ),
    ] = None,
    *,
    where: TargetOptions,
) -> None:
    """Per job: last success, last failure, next ticks, and expected ticks the ledger does not show as succeeded.

    Exit 1 when a tick is missing, 2 when the target cannot be read.
    """
    tpl, target = where.open()
    now = datetime.now(UTC)
    window = timedelta(days=window_days)
    with acting_on(target):
        statuses = [job_status(tpl, target, job, now=now, window=window) for job in sorted(tpl.jobs)]
        grids = [
            job_grid(
                tpl,
                target,
                s.job,
                now=now,
                window=window,
                failing=[tick.scheduled_time for tick in s.fanned_out if tick.failing],
                overlap=s.overlap,
            )
            for s in statuses
        ]
    if html_file is not None:
        page = StatusPage(
            title=f"clockless status: {target.description}",
            target=target.description,
            generated_at=now,
            window_start=now - window,
            window_end=now,
            statuses=statuses,
            grids=grids,
        )
        html_file.write_text(render_page(page), encoding="utf-8")
    if as_json:
        print(json.dumps({"target": target.description, "jobs": [s.as_dict() for s in statuses]}, indent=2))
    else:
        table = Table(title=f"clockless status: {target.description}, last {format_span(window)}")
        for column in COLUMNS:
            table.add_column(column, no_wrap=True)
        for s in statuses:
            job, *cells, missing = [[escape(line) for line in lines] for lines in table_cells(s)]
            if s.paused_since is not None:
                job[1] = job[1].replace("paused", "[yellow]paused[/]", 1)
                cells[2] = [f"[yellow]{cells[2][0]}[/]"]
            missing[0] = f"[bold red]{missing[0]}[/]" if s.missing else f"[green]{missing[0]}[/]"
            table.add_row(*("\n".join(lines) for lines in (job, *cells, missing)))
        stdout.print(table)
        for s in statuses:
            for line in fanned_out_lines(s):
                line_stdout.print(escape(line))
        colour = sys.stdout.isatty()
        for grid in grids:
            (stdout if colour else line_stdout).print(render_text(grid, colour=colour), highlight=False)
    if html_file is not None:
        line_stderr.print(f"status page written to {html_file}")
    if any(s.missing for s in statuses):
        raise typer.Exit(code=EXIT_FOUND)


@app.command("backfill", rich_help_panel=OPERATE)
@target_options
def backfill_command(
    job: JobArgument,
    from_: Annotated[
        str,
        typer.Option(
            "--from", help="Start, inclusive (ISO-8601 with Z or an offset; used in UTC). E.g. 2026-11-28T00:00:00Z"
        ),
    ],
    to: Annotated[
        str,
        typer.Option(
            "--to", help="End, exclusive (ISO-8601 with Z or an offset; used in UTC). E.g. 2026-11-29T00:00:00Z"
        ),
    ],
    policy: Annotated[
        BackfillPolicy,
        typer.Option(
            help="all: replay every missing tick; latest: replay the newest and record the older as skipped; "
            "skip: replay none, record each as skipped. E.g. --policy latest"
        ),
    ] = BackfillPolicy.ALL,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be done; change nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Allow a range over the safety limits.")] = False,
    verbose: VerboseOption = False,
    log_file: LogOption = BACKFILL_LOG,
    as_json: JsonOption = False,
    *,
    where: TargetOptions,
) -> None:
    """Replay each tick in [--from, --to) that never succeeded, with the scheduler's payload (trigger backfill)."""
    start, end = parse_time(from_, "--from"), parse_time(to, "--to")
    tpl, target = where.open()
    # Only the local runtime runs functions in this process; a stack's logs are in CloudWatch.
    log_path = None if verbose or not isinstance(target, LocalTarget) else log_file
    with (
        acting_on(target),
        function_output(log_path) as terminal,
        Progress(console=Console(file=terminal), transient=True, disable=as_json or not terminal.isatty()) as progress,
    ):
        task = progress.add_task(f"backfilling {job}", total=None)

        def advance(scheduled_time: datetime, outcome: str) -> None:
            progress.update(task, advance=1, description=f"{job} {format_scheduled_time(scheduled_time)}: {outcome}")

        result = backfill(
            tpl,
            target,
            job,
            start=start,
            end=end,
            policy=policy,
            dry_run=dry_run,
            force=force,
            on_plan=lambda planned: progress.update(task, total=len(planned)),
            on_tick=advance,
        )
    log = None if log_path is None else shown(log_path)
    if as_json:
        print(json.dumps({**result.as_dict(), "function_log": log}, indent=2))
        return
    line_stdout.print(
        f"{job}: {len(result.missing)} missing tick(s) in [{utc(start)}, {utc(end)}) on {target.description}"
    )
    if result.not_yet_due:
        line_stdout.print(f"{result.not_yet_due} tick(s) of the range are after now: not due yet, left to the schedule")
    if not result.planned:
        line_stdout.print("nothing to do")
    for scheduled_time in result.planned:
        key = format_scheduled_time(scheduled_time)
        line_stdout.print(escape(f"  {key}  {result.did.get(key) or result.outcomes.get(key, result.verb)}"))
    for key, outcome in result.superseded.items():
        line_stdout.print(f"  {key}  {outcome}")
    if result.planned and not dry_run:
        line_stdout.print(f"{result.verb}: {len(result.outcomes)}")
    if log is not None and result.outcomes and policy is not BackfillPolicy.SKIP:
        line_stdout.print(f"function logs and metrics: {log}")
    failing = [key for key, outcome in result.outcomes.items() if outcome == OUTCOME_PARTITIONS_FAILING]
    if failing:
        line_stderr.print(
            f"error: {len(failing)} replayed tick(s) were claimed and fanned out and their partitions are failing "
            f"({', '.join(failing)}); `clockless status` shows each partition"
        )
        raise typer.Exit(code=EXIT_PARTITIONS_FAILING)


@app.command("run-now", rich_help_panel=OPERATE)
@target_options
def run_now_command(
    job: JobArgument,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Scheduled time (ISO-8601 with Z or an offset; used in UTC); default now, to the minute. "
            "E.g. --at 2026-11-29T12:30:00Z",
        ),
    ] = None,
    verbose: VerboseOption = False,
    log_file: LogOption = RUN_NOW_LOG,
    as_json: JsonOption = False,
    *,
    where: TargetOptions,
) -> None:
    """Run one manual tick with exactly a scheduled tick's semantics; say whether it ran and what it did.

    Exit 2 when it was refused or its function failed, 3 when it was claimed and fanned out and its
    partitions are failing."""
    when = None if at is None else parse_time(at, "--at")
    tpl, target = where.open()
    # Only the local runtime runs functions in this process; a stack's logs are in CloudWatch.
    log_path = None if verbose or not isinstance(target, LocalTarget) else log_file
    log = None if log_path is None else shown(log_path)
    logs_at = f"; function logs: {log}" if log else ""
    try:
        with acting_on(target), function_output(log_path):
            result = run_now(target, tpl, job, at=when)
            did = what_it_did(target, job, result)
    except PartitionsFailing as failing:
        line_stderr.print(escape(f"error: {failing_line(job, failing)}{logs_at}"))
        raise typer.Exit(code=EXIT_PARTITIONS_FAILING) from None
    except typer.Exit:
        if log:
            line_stderr.print(f"function logs: {log}")
        raise
    if as_json:
        print(json.dumps({**result, "did": did, "function_log": log}, indent=2))
        return
    line_stdout.print(escape(f"{job} @ {result.get('scheduled_time')} {verdict(result)}: {did}"))
    if log:
        line_stdout.print(f"function logs and metrics: {log}")
