"""`clockless pause <job>` / `resume <job>`: stop and restart a job's schedule, on the local runtime
or a deployed stack, with who and why recorded in the ledger."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from clockless_tools.cli.common import OPERATE, JsonOption, line_stdout
from clockless_tools.cli.operations import JobArgument
from clockless_tools.cli.target import TargetOptions, acting_on, target_options
from clockless_tools.operations.pause import PauseResult, set_paused

app = typer.Typer()


def _report(result: PauseResult, as_json: bool, target: str) -> None:
    if as_json:
        print(json.dumps(result.as_dict(), indent=2))
        return
    state = "paused" if result.action == "paused" else "running"
    done = f"{result.action}" if result.changed else f"already {state}; nothing changed"
    alarms = ""
    if result.alarms:
        alarms = f"; dead-man alarm actions {'off' if result.action == 'paused' else 'on'}: {', '.join(result.alarms)}"
    line_stdout.print(f"{result.job}: {done} (schedule {result.schedule} on {target}{alarms})")


@app.command("pause", rich_help_panel=OPERATE)
@target_options
def pause(
    job: JobArgument,
    reason: Annotated[
        str, typer.Option("--reason", help="Why, recorded in the ledger. E.g. --reason 'vendor API down, INC-1234'")
    ],
    as_json: JsonOption = False,
    *,
    where: TargetOptions,
) -> None:
    """Pause a job: its schedule's State set to DISABLED (nothing else changed); status stops counting its ticks."""
    tpl, target = where.open()
    with acting_on(target):
        result = set_paused(target, tpl, job, paused=True, reason=reason, now=datetime.now(UTC))
    _report(result, as_json, target.description)


@app.command("resume", rich_help_panel=OPERATE)
@target_options
def resume(
    job: JobArgument,
    reason: Annotated[
        str, typer.Option("--reason", help="Why, recorded in the ledger. E.g. --reason 'INC-1234 fixed'")
    ] = "",
    as_json: JsonOption = False,
    *,
    where: TargetOptions,
) -> None:
    """Resume a paused job: its schedule's State set to ENABLED. Ticks missed while paused stay unreported;
    replay them with `clockless backfill` if the job needs them."""
    tpl, target = where.open()
    with acting_on(target):
        result = set_paused(target, tpl, job, paused=False, reason=reason, now=datetime.now(UTC))
    _report(result, as_json, target.description)
