"""`clockless status`, `clockless backfill`, `clockless run-now`: against the local runtime
(default: the running `clockless local up`) or a deployed stack (`--stack`, `--region`, `--profile`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from clockless import format_scheduled_time
from clockless_tools.cli.common import OPERATE, TemplateOption, fail, parse_time, stderr, stdout
from clockless_tools.local.server import running_endpoint
from clockless_tools.operations.backfill import BackfillPolicy, backfill
from clockless_tools.operations.run_now import run_now
from clockless_tools.operations.status import job_status
from clockless_tools.operations.targets import JobTarget, LocalTarget, OperationError, stack_target
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError
from clockless_tools.template.model import Template

app = typer.Typer()

StackOption = Annotated[str | None, typer.Option("--stack", help="A deployed stack (default: the local runtime).")]
RegionOption = Annotated[str | None, typer.Option("--region", help="AWS region, as the AWS CLI takes it.")]
ProfileOption = Annotated[str | None, typer.Option("--profile", help="AWS profile, as the AWS CLI takes it.")]
EndpointOption = Annotated[
    str | None, typer.Option("--endpoint", help="Local DynamoDB endpoint (default: the running `local up`).")
]


def _target(
    template_path: Path, stack: str | None, region: str | None, profile: str | None, endpoint: str | None
) -> tuple[Template, JobTarget]:
    try:
        template = Template.load(template_path)
        if stack is not None:
            return template, stack_target(template, stack, region=region, profile=profile)
        endpoint = endpoint or running_endpoint()
        if endpoint is None:
            raise fail("no embedded DynamoDB is running: start it with `make local-up`, or pass --stack")
        return template, LocalTarget(template, endpoint)
    except (TemplateError, OperationError) as error:
        raise fail(str(error)) from None


def _when(entry_time: datetime | None) -> str:
    return "-" if entry_time is None else format_scheduled_time(entry_time)


@app.command("status", rich_help_panel=OPERATE)
def status(
    template: TemplateOption = DEFAULT_TEMPLATE,
    window_days: Annotated[float, typer.Option("--window-days", min=0.01, help="How far back to look.")] = 7,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    stack: StackOption = None,
    region: RegionOption = None,
    profile: ProfileOption = None,
    endpoint: EndpointOption = None,
) -> None:
    """Per job: last success, last failure, next ticks, and expected ticks the ledger does not show as succeeded."""
    tpl, target = _target(template, stack, region, profile, endpoint)
    now = datetime.now(UTC)
    statuses = [job_status(tpl, target, job, now=now, window=timedelta(days=window_days)) for job in sorted(tpl.jobs)]
    if as_json:
        stdout.print_json(json.dumps({"target": target.description, "jobs": [s.as_dict() for s in statuses]}))
    else:
        table = Table(title=f"clockless status: {target.description}, last {window_days:g} days")
        for column in ("job", "last success", "last failure", "next ticks", "expected", "missing"):
            table.add_column(column)
        for s in statuses:
            missing = "\n".join(format_scheduled_time(t) for t in s.missing[:20])
            if len(s.missing) > 20:
                missing += f"\n… {len(s.missing) - 20} more (--json lists all)"
            table.add_row(
                s.job,
                _when(s.last_success.scheduled_time if s.last_success else None),
                _when(s.last_failure.scheduled_time if s.last_failure else None)
                + (f"\n{s.last_failure.error}" if s.last_failure and s.last_failure.error else ""),
                "\n".join(format_scheduled_time(t) for t in s.next_ticks),
                str(s.expected),
                f"[bold red]{len(s.missing)}[/]\n{missing}" if s.missing else "[green]0[/]",
            )
        stdout.print(table)
    if any(s.missing for s in statuses):
        raise typer.Exit(code=1)


@app.command("backfill", rich_help_panel=OPERATE)
def backfill_command(
    job: Annotated[str, typer.Argument(help='The job name (the schedule Input\'s "job").')],
    from_: Annotated[str, typer.Option("--from", help="Start, inclusive (UTC ISO-8601).")],
    to: Annotated[str, typer.Option("--to", help="End, exclusive (UTC ISO-8601).")],
    policy: Annotated[
        BackfillPolicy, typer.Option(help="all: every missing tick; latest: the newest; skip: none, recorded.")
    ] = BackfillPolicy.ALL,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would run; change nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Allow a range over the safety limits.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    template: TemplateOption = DEFAULT_TEMPLATE,
    stack: StackOption = None,
    region: RegionOption = None,
    profile: ProfileOption = None,
    endpoint: EndpointOption = None,
) -> None:
    """Replay each tick in [--from, --to) that never succeeded, with the scheduler's payload (trigger backfill)."""
    start, end = parse_time(from_, "--from"), parse_time(to, "--to")
    tpl, target = _target(template, stack, region, profile, endpoint)
    try:
        with Progress(console=stderr, transient=True, disable=as_json) as progress:
            task = progress.add_task(f"backfilling {job}", total=None)

            def advance(scheduled_time: datetime, outcome: str) -> None:
                progress.update(
                    task, advance=1, description=f"{job} {format_scheduled_time(scheduled_time)}: {outcome}"
                )

            result = backfill(
                tpl, target, job, start=start, end=end, policy=policy, dry_run=dry_run, force=force, on_tick=advance
            )
    except OperationError as error:
        raise fail(str(error)) from None
    if as_json:
        stdout.print_json(json.dumps(result.as_dict()))
        return
    verb = (
        "would replay" if dry_run else {"skip": "recorded as skipped", "all": "replayed", "latest": "replayed"}[policy]
    )
    stdout.print(f"{job}: {len(result.missing)} missing tick(s) in [{from_}, {to}) on {target.description}")
    if result.not_yet_due:
        stdout.print(f"{result.not_yet_due} tick(s) of the range are after now: not due yet, left to the schedule")
    if not result.planned:
        stdout.print("nothing to do")
    for scheduled_time in result.planned:
        key = format_scheduled_time(scheduled_time)
        stdout.print(f"  {key}  {result.outcomes.get(key, verb)}")
    if result.planned and not dry_run:
        stdout.print(f"{verb}: {len(result.outcomes)}")


@app.command("run-now", rich_help_panel=OPERATE)
def run_now_command(
    job: Annotated[str, typer.Argument(help='The job name (the schedule Input\'s "job").')],
    at: Annotated[
        str | None, typer.Option("--at", help="Scheduled time (UTC ISO-8601); default now, to the minute.")
    ] = None,
    template: TemplateOption = DEFAULT_TEMPLATE,
    stack: StackOption = None,
    region: RegionOption = None,
    profile: ProfileOption = None,
    endpoint: EndpointOption = None,
) -> None:
    """Run one manual tick with exactly a scheduled tick's semantics; say whether it ran or was a duplicate."""
    when = None if at is None else parse_time(at, "--at")
    tpl, target = _target(template, stack, region, profile, endpoint)
    try:
        result = run_now(target, tpl, job, at=when)
    except OperationError as error:
        raise fail(str(error)) from None
    outcome = result.get("outcome")
    verdict = "ran" if outcome == "executed" else f"was a duplicate ({outcome}); nothing ran"
    stdout.print(f"{job} @ {result.get('scheduled_time')} {verdict}")
    stdout.print_json(json.dumps(result.get("summary") or {}))
