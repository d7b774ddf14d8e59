"""`clockless drift`: whether the deployed schedules still match template.yaml."""

from __future__ import annotations

import json

import typer

from clockless_tools.cli.common import OPERATE, JsonOption, TemplateOption, line_stdout
from clockless_tools.cli.operations import (
    ConfigEnvOption,
    ConfigFileOption,
    EndpointOption,
    ProfileOption,
    RegionOption,
    StackOption,
    acting_on,
    target_from_options,
)
from clockless_tools.operations.connection import DEFAULT_CONFIG_ENV
from clockless_tools.operations.drift import describe, schedule_drift
from clockless_tools.template.loader import DEFAULT_TEMPLATE

app = typer.Typer()


@app.command("drift", rich_help_panel=OPERATE)
def drift(
    as_json: JsonOption = False,
    template: TemplateOption = DEFAULT_TEMPLATE,
    stack: StackOption = None,
    region: RegionOption = None,
    profile: ProfileOption = None,
    config_env: ConfigEnvOption = DEFAULT_CONFIG_ENV,
    config_file: ConfigFileOption = None,
    endpoint: EndpointOption = None,
) -> None:
    """Compare each deployed schedule with template.yaml (expression, zone, state, flexible window, retry policy,
    DLQ, target ARN, Input exactly); exit 1 naming each field that differs."""
    tpl, target = target_from_options(template, stack, region, profile, endpoint, config_env, config_file)
    with acting_on(target):
        drifts = [schedule_drift(target, tpl, job) for job in sorted(tpl.jobs)]
    if as_json:
        print(json.dumps({"target": target.description, "schedules": [d.as_dict() for d in drifts]}, indent=2))
    else:
        for d in drifts:
            if not d.found:
                line_stdout.print(f"{d.job} ({d.schedule}): not deployed — deploy the current template.yaml")
            elif not d.fields:
                line_stdout.print(f"{d.job} ({d.schedule}): matches template.yaml")
            for f in d.fields:
                line_stdout.print(
                    f"{d.job} ({d.schedule}): {f.field} differs: template {describe(f.template)}, "
                    f"deployed {describe(f.deployed)}"
                )
    if any(d.drifted for d in drifts):
        raise typer.Exit(code=1)
