"""`clockless pause <job>` / `resume <job>`: stop and restart a job's schedule, on the local runtime
or a deployed stack, with who and why recorded in the ledger."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from clockless_tools.cli.common import OPERATE, JsonOption, TemplateOption, line_stdout
from clockless_tools.cli.operations import (
    ConfigEnvOption,
    ConfigFileOption,
    EndpointOption,
    JobArgument,
    ProfileOption,
    RegionOption,
    StackOption,
    acting_on,
    target_from_options,
)
from clockless_tools.operations.connection import DEFAULT_CONFIG_ENV
from clockless_tools.operations.pause import PauseResult, set_paused
from clockless_tools.template.loader import DEFAULT_TEMPLATE

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
def pause(
    job: JobArgument,
    reason: Annotated[
        str, typer.Option("--reason", help="Why, recorded in the ledger. E.g. --reason 'vendor API down, INC-1234'")
    ],
    as_json: JsonOption = False,
    template: TemplateOption = DEFAULT_TEMPLATE,
    stack: StackOption = None,
    region: RegionOption = None,
    profile: ProfileOption = None,
    config_env: ConfigEnvOption = DEFAULT_CONFIG_ENV,
    config_file: ConfigFileOption = None,
    endpoint: EndpointOption = None,
) -> None:
    """Pause a job: its schedule's State set to DISABLED (nothing else changed); status stops counting its ticks."""
    tpl, target = target_from_options(template, stack, region, profile, endpoint, config_env, config_file)
    with acting_on(target):
        result = set_paused(target, tpl, job, paused=True, reason=reason, now=datetime.now(UTC))
    _report(result, as_json, target.description)


@app.command("resume", rich_help_panel=OPERATE)
def resume(
    job: JobArgument,
    reason: Annotated[
        str, typer.Option("--reason", help="Why, recorded in the ledger. E.g. --reason 'INC-1234 fixed'")
    ] = "",
    as_json: JsonOption = False,
    template: TemplateOption = DEFAULT_TEMPLATE,
    stack: StackOption = None,
    region: RegionOption = None,
    profile: ProfileOption = None,
    config_env: ConfigEnvOption = DEFAULT_CONFIG_ENV,
    config_file: ConfigFileOption = None,
    endpoint: EndpointOption = None,
) -> None:
    """Resume a paused job: its schedule's State set to ENABLED. Ticks missed while paused stay unreported;
    replay them with `clockless backfill` if the job needs them."""
    tpl, target = target_from_options(template, stack, region, profile, endpoint, config_env, config_file)
    with acting_on(target):
        result = set_paused(target, tpl, job, paused=False, reason=reason, now=datetime.now(UTC))
    _report(result, as_json, target.description)
