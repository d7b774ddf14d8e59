"""`clockless shards check`: each fanned-out job's shard count in the template against its latest
fanned-out tick in the ledger; a lowered count is refused unless it follows the migration."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from clockless_tools.cli.common import CHECK, EXIT_FOUND, fail, line_stdout
from clockless_tools.cli.target import TargetOptions, acting_on, target_options
from clockless_tools.operations.connection import StackNotDeployed, samconfig_parameters
from clockless_tools.operations.shards import check_shards, declared_shards

app = typer.Typer(no_args_is_help=True, help=__doc__.splitlines()[0])

BeforeDeployOption = Annotated[
    bool,
    typer.Option(
        "--before-deploy",
        help="Check the stack `sam deploy` deploys (samconfig.toml's stack_name unless --stack); "
        "a stack not deployed yet passes. `make deploy` runs it.",
    ),
]


@app.command("check", rich_help_panel=CHECK)
@target_options
def check(before_deploy: BeforeDeployOption = False, *, where: TargetOptions) -> None:
    """Refuse (exit 1) a fanned-out job's shard count lower than its latest tick's, unless the job is paused
    and no tick of it is still started (docs/fan-out.md#changing-a-jobs-shard-count)."""
    if before_deploy and where.stack is None:
        samconfig = where.config_file or where.template.resolve().parent / "samconfig.toml"
        stack = samconfig_parameters(samconfig, where.config_env).get("stack_name")
        if not isinstance(stack, str) or not stack:
            raise fail(f"{samconfig.name} [{where.config_env}] names no stack_name: pass --stack")
        where = dataclasses.replace(where, stack=stack)
    try:
        template, target = where.open_target()
    except StackNotDeployed as error:
        if not before_deploy:
            raise fail(str(error)) from None
        line_stdout.print(f"stack {where.stack!r} is not deployed yet: no tick to compare")
        return
    with acting_on(target):
        checks = check_shards(target, declared_shards(template))
    for shard_check in checks:
        line_stdout.print(shard_check.line())
    if any(shard_check.refusal is not None for shard_check in checks):
        raise typer.Exit(code=EXIT_FOUND)
