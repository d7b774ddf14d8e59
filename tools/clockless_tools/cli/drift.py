"""`clockless drift`: whether the deployed schedules still match template.yaml."""

from __future__ import annotations

import json

import typer

from clockless_tools.cli.common import OPERATE, JsonOption, line_stdout
from clockless_tools.cli.target import TargetOptions, acting_on, target_options
from clockless_tools.operations.drift import describe, schedule_drift

app = typer.Typer()


@app.command("drift", rich_help_panel=OPERATE)
@target_options
def drift(
    as_json: JsonOption = False,
    *,
    where: TargetOptions,
) -> None:
    """Compare each deployed schedule with template.yaml (expression, zone, state, flexible window, retry policy,
    DLQ, target ARN, Input exactly); exit 1 naming each field that differs."""
    tpl, target = where.open()
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
