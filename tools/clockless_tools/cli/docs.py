"""`clockless docs [--check]`: the tables README.md and docs/*.md show that a command can generate.

`clockless docs` runs each generated block's command (generated.py says what a block is) and writes
its output in; `--check` (which tests/unit/test_docs.py runs) exits 1 naming every block that
differs, so a table cannot drift from the registry or the results file it comes from.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from clockless_tools.cli.common import CHECK, fail
from clockless_tools.cli.common import line_stdout as stdout
from clockless_tools.cli.generated import DocsError, regenerate_all, running_cli
from clockless_tools.template.loader import PROJECT_ROOT

app = typer.Typer()


@app.command("docs", rich_help_panel=CHECK)
def docs(
    ctx: typer.Context,
    check: Annotated[bool, typer.Option("--check", help="Change nothing; exit 1 if a table is stale.")] = False,
) -> None:
    """Rewrite the generated tables in README.md and docs/ from the commands they name."""
    try:
        stale = regenerate_all(running_cli(ctx), write=not check)
    except DocsError as error:
        raise fail(str(error)) from None
    for block in stale:
        where = f"{block.path.relative_to(PROJECT_ROOT)}:{block.line}"
        verb = "is stale" if check else "rewritten"
        stdout.print(f"{escape(where)}  {verb}: `{escape(block.command)}`")
    if check and stale:
        stdout.print("run `make docs` and commit the result")
        raise typer.Exit(code=1)
    if not stale:
        stdout.print("every generated table is current")
