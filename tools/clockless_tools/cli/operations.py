"""`clockless backfill`, `clockless run-now`: against the local runtime
(default: the running `clockless local up`) or a deployed stack (`--stack`, `--region`, `--profile`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

from clockless import format_scheduled_time
from clockless_tools.cli.common import (
    EXIT_PARTITIONS_FAILING,
    OPERATE,
    JsonOption,
    function_log,
    function_output,
    line_stderr,
    line_stdout,
    parse_time,
    print_function_log,
    shown,
    utc,
)
from clockless_tools.cli.target import TargetOptions, acting_on, target_options
from clockless_tools.operations.backfill import NOT_DONE_OUTCOMES, BackfillPolicy, backfill
from clockless_tools.operations.pause import OVERRIDE_FLAG, guard_pause
from clockless_tools.operations.report import failing_line, tick_trouble, verdict, what_it_did
from clockless_tools.operations.restart import RESTART_FLAG, Restarted
from clockless_tools.operations.restart import restart as restart_tick
from clockless_tools.operations.run_now import run_now, tick_to_run
from clockless_tools.operations.targets import JobTarget, LocalTarget, PartitionsFailing
from clockless_tools.template.model import Template

app = typer.Typer()

VerboseOption = Annotated[
    bool, typer.Option("--verbose", help="Stream the functions' logs to stderr instead of the --log file.")
]


OverridePauseOption = Annotated[
    bool,
    typer.Option(
        OVERRIDE_FLAG, help="Run the job though it is paused; the ledger records who ran which tick through the pause."
    ),
]


_LOG_HELP = "Where the functions' logs and metrics go on the local runtime (appended). E.g. --log tick.log"
LogOption = Annotated[Path, typer.Option("--log", help=_LOG_HELP)]
BACKFILL_LOG, RUN_NOW_LOG = function_log("backfill"), function_log("run-now")


JobArgument = Annotated[str, typer.Argument(help='The job name (the schedule Input\'s "job"). E.g. session-cleanup')]


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
    override_pause: OverridePauseOption = False,
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
            override_pause=override_pause,
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
    failing = [key for key, outcome in result.outcomes.items() if outcome in NOT_DONE_OUTCOMES]
    if result.planned and not dry_run:
        counted = f"{result.verb}: {len(result.outcomes) - len(failing)}"
        line_stdout.print(counted + (f", not done: {len(failing)}" if failing else ""))
    if log is not None and result.outcomes and policy is not BackfillPolicy.SKIP:
        print_function_log(log)
    if failing:
        line_stderr.print(
            f"error: {len(failing)} tick(s) are not done ({', '.join(failing)}): the line of each says why; "
            "`clockless status` shows each partition"
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
            help="A scheduled time of the job's schedule (ISO-8601 with Z or an offset; used in UTC); default the "
            "latest at or before now. E.g. --at 2026-11-29T12:00:00Z",
        ),
    ] = None,
    off_schedule: Annotated[
        bool,
        typer.Option(
            "--off-schedule",
            help="Run at --at (default now, to the minute) though it is not a scheduled time; the ledger records "
            "trigger off-schedule.",
        ),
    ] = False,
    restart: Annotated[
        bool,
        typer.Option(
            RESTART_FLAG,
            help="For a started, fanned-out tick whose partition messages were lost (a purged work queue): send "
            "the partitions not done again (each item is still applied once); nothing else is delivered.",
        ),
    ] = False,
    override_pause: OverridePauseOption = False,
    verbose: VerboseOption = False,
    log_file: LogOption = RUN_NOW_LOG,
    as_json: JsonOption = False,
    *,
    where: TargetOptions,
) -> None:
    """Run one manual tick with exactly a scheduled tick's semantics; say whether it ran and what it did.

    Exit 2 when it was refused (an instant that is not a scheduled time, without --off-schedule) or its
    function failed, 3 when the tick is not done (it ended failed, or it fanned out and its partitions
    fail or are stuck: --restart sends them again), 5 when the job is paused (--override-pause)."""
    when = None if at is None else parse_time(at, "--at", tick=True)
    tpl, target = where.open()
    # Only the local runtime runs functions in this process; a stack's logs are in CloudWatch.
    log_path = None if verbose or not isinstance(target, LocalTarget) else log_file
    log = None if log_path is None else shown(log_path)
    logs_at = f"; function logs: {log}" if log else ""
    logged_before = _size(log_path)
    restarted = None
    try:
        with acting_on(target), function_output(log_path):
            if restart:
                restarted, result = _restart(
                    target, tpl, job, when, off_schedule=off_schedule, override_pause=override_pause
                )
            else:
                result = run_now(target, tpl, job, at=when, off_schedule=off_schedule, override_pause=override_pause)
            trouble = tick_trouble(tpl, target, job, result, now=datetime.now(UTC))
            did = what_it_did(target, job, result)
    except PartitionsFailing as failing:
        line_stderr.print(escape(f"error: {failing_line(job, failing)}{logs_at}"))
        raise typer.Exit(code=EXIT_PARTITIONS_FAILING) from None
    except typer.Exit:
        if log and _size(log_path) != logged_before:  # a function ran and wrote; a refusal wrote nothing
            print_function_log(log)
        raise
    said = f"{job} @ {result.get('scheduled_time')} restarted: {restarted.line()}; " if restarted else ""
    if trouble is not None:
        line_stderr.print(escape(f"error: {said}{trouble[1]}{logs_at}"))
        raise typer.Exit(code=EXIT_PARTITIONS_FAILING)
    if as_json:
        extra = {"restarted": restarted.as_dict()} if restarted else {}
        print(json.dumps({**result, **extra, "did": did, "function_log": log}, indent=2))
        return
    if restarted:
        line_stdout.print(escape(f"{said}then {did}"))
    else:
        line_stdout.print(escape(f"{job} @ {result.get('scheduled_time')} {verdict(result)}: {did}"))
    if log:
        print_function_log(log)


def _restart(
    target: JobTarget, tpl: Template, job: str, at: datetime | None, *, off_schedule: bool, override_pause: bool
) -> tuple[Restarted, dict[str, Any]]:
    """`--restart`: the named tick's lost partitions sent again and, here, run; the tick's identity as
    a delivery's answer names it (outcome `restarted`)."""
    now = datetime.now(UTC)
    scheduled_time, _ = tick_to_run(target, tpl, job, at=at, now=now, off_schedule=off_schedule)
    guard_pause(target, job, override=override_pause, what="run-now --restart", ticks=[scheduled_time], now=now)
    restarted = restart_tick(target, tpl, job, scheduled_time, now_ms=int(now.timestamp() * 1000))
    when = format_scheduled_time(scheduled_time)
    response: dict[str, Any] = {"job": job, "scheduled_time": when, "outcome": "restarted"}
    try:
        target.drain(job, when)
    except PartitionsFailing as failing:
        failing.response = {**response, "summary": {"fan_out": {"partitions": restarted.partitions_total}}}
        raise
    return restarted, response


def _size(path: Path | None) -> int:
    """How much the log holds (0: none yet), to tell whether a function wrote to it."""
    try:
        return 0 if path is None else path.stat().st_size
    except FileNotFoundError:
        return 0
