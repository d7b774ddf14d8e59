"""The `clockless` command: the local runtime and operations on template.yaml's jobs.

Each command group is a module of this package exporting a Typer `app`; this one composes them
under help panels. `common` holds what they share.
"""

from __future__ import annotations

import typer

from clockless_tools.cli import arch, bench, events, invoke, local, operations, schedules, simulate
from clockless_tools.cli.common import CHECK, MEASURE, RUN_LOCALLY

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__.splitlines()[0])
app.add_typer(simulate.app)
app.add_typer(invoke.app)
app.add_typer(events.app)
app.add_typer(
    local.app,
    name="local",
    help="The persistent embedded DynamoDB (moto's server on loopback).",
    rich_help_panel=RUN_LOCALLY,
)
app.add_typer(operations.app)
app.add_typer(arch.app)
app.add_typer(
    schedules.app,
    name="schedules",
    help="UTC schedules checked against the operating time zones.",
    rich_help_panel=CHECK,
)
app.add_typer(bench.app, name="bench", rich_help_panel=MEASURE)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
