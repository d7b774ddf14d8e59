"""The `clockless` command: the local runtime and operations on template.yaml's jobs.

Each command group is a module of this package exporting a Typer `app`; this one composes them
under help panels. `common` holds what they share.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated, Any

import typer
from typer.core import TyperOption

from clockless_tools.cli import (
    arch,
    bench,
    docs,
    drift,
    engine,
    events,
    invoke,
    local,
    new,
    operations,
    pause,
    schedules,
    security,
    shards,
    simulate,
    status,
    work,
)
from clockless_tools.cli.common import CHECK, CREATE, MEASURE, OPERATE, RUN_LOCALLY

# Typer (0.29) labels every flag `<bool>` in --help, as if it took a value; a flag takes none, so
# its type column stays empty. tests/unit/test_cli_help.py notices if an upgrade changes this.
_display_type = TyperOption.display_type_rich


def _flag_without_type(self: TyperOption, ctx: Any) -> str | None:
    return None if self.is_flag else _display_type(self, ctx)


TyperOption.display_type_rich = _flag_without_type  # type: ignore[method-assign]

app = typer.Typer(no_args_is_help=True, help=__doc__.splitlines()[0])


def _print_version(asked: bool) -> None:
    if asked:
        print(f"clockless {version('clockless')}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    _version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Scheduled jobs on AWS Lambda that take effect exactly once per tick."""
    # The commands that run other commands (`docs`, `new job`: generated.running_cli) find the CLI
    # here, where importing this module would close a circle.
    ctx.obj = app


app.add_typer(simulate.app)
app.add_typer(invoke.app)
app.add_typer(events.app)
app.add_typer(
    local.app,
    name="local",
    help="The embedded DynamoDB in the background (moto's server on loopback, in memory until `local down`).",
    rich_help_panel=RUN_LOCALLY,
)
app.add_typer(
    engine.app,
    name="engine",
    help="The container engine and the stand-in runtime image `sam local` runs the functions on (never pulls).",
    rich_help_panel=RUN_LOCALLY,
)
app.add_typer(status.app)
app.add_typer(operations.app)
app.add_typer(pause.app)
app.add_typer(
    work.app,
    name="work",
    help="A fanned-out job's work queue and its dead-letter queue: show what failed, redrive it.",
    rich_help_panel=OPERATE,
)
app.add_typer(
    shards.app,
    name="shards",
    help="A fanned-out job's shard count against its deployed ticks: a lowered count refused without its migration.",
    rich_help_panel=CHECK,
)
app.add_typer(drift.app)
app.add_typer(arch.app)
app.add_typer(docs.app)
app.add_typer(security.app)
app.add_typer(
    schedules.app,
    name="schedules",
    help="UTC schedules checked against the operating time zones.",
    rich_help_panel=CHECK,
)
app.add_typer(bench.app, name="bench", rich_help_panel=MEASURE)
app.add_typer(new.app, name="new", rich_help_panel=CREATE)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
