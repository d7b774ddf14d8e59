"""`clockless new job NAME [--schedule EXPR | --at HH:MM] [--zones Z,...] [--local-time RULE] [--fan-out]`: a new job's
package, tests, demo seed, table and wiring."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from clockless_tools.cli.common import fail, stdout
from clockless_tools.cli.generated import regenerate_all, running_cli
from clockless_tools.scaffold.new_job import NewJobError, new_job
from clockless_tools.template.loader import PROJECT_ROOT

app = typer.Typer(no_args_is_help=True, help="Start something new in the project (like `sam init`, for a job).")


@app.command("job")
def job(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="The job's name: lowercase words joined by hyphens. E.g. subscription-expiry")
    ],
    fan_out: Annotated[
        bool, typer.Option("--fan-out", help="Fan each tick out to SQS workers, one per shard of a sparse index.")
    ] = False,
    schedule: Annotated[
        str | None,
        typer.Option(
            help="Its ScheduleV2 expression, a cron in UTC; the retry ages, grace, dead-man and page numbers are "
            "derived from it. Default: daily at 03:00 UTC. E.g. --schedule 'cron(0/15 * * * ? *)'"
        ),
    ] = None,
    zones: Annotated[
        str | None,
        typer.Option(
            help="The IANA zones it serves, comma-separated (default: the stack's). E.g. --zones Europe/Berlin"
        ),
    ] = None,
    local_time: Annotated[
        str | None,
        typer.Option(
            help="Its local-time rule in those zones, checked against the schedule over a year. "
            "E.g. --local-time not_before=06:00,same_local_date"
        ),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            help="A local time kept in every one of --zones (instead of --schedule): its ticks are that time in "
            "each zone, its Schedule the cron of every UTC hour it falls on. E.g. --at 07:30 "
            "--zones America/New_York,America/Chicago"
        ),
    ] = None,
    project: Annotated[
        Path, typer.Option(help="The project's root (its template.yaml, functions/ and tests/). E.g. --project .")
    ] = Path(),
) -> None:
    """Write a job's package (handler, logic, repository, settings, worker with --fan-out, demo seed),
    its tests, its table and its declaration; print what is left to do."""
    root = project.resolve()
    try:
        made = new_job(root, name, fan_out=fan_out, schedule=schedule, zones=zones, local_time=local_time, at=at)
    except NewJobError as error:
        raise fail(str(error)) from None
    if root == PROJECT_ROOT:
        # The generated tables that list every job (alarm timing) follow the template at once, so
        # the project the command leaves behind passes `make test` (`make docs` again after edits).
        rewritten = {
            block.path.relative_to(PROJECT_ROOT).as_posix() for block in regenerate_all(running_cli(ctx), write=True)
        }
        made.edited.extend(sorted(rewritten))
    stdout.print(f"made job {escape(made.names.job)}{' (fanned out)' if fan_out else ''} in {escape(str(root))}")
    for path in made.created:
        stdout.print(f"  created {escape(path)}", highlight=False)
    for path in made.edited:
        stdout.print(f"  edited  {escape(path)}", highlight=False)
    stdout.print("left to do (docs/adding-a-job.md):", highlight=False)
    for number, step in enumerate(made.left_to_do(), 1):
        stdout.print(f"  {number}. {escape(step)}", highlight=False, soft_wrap=True)
