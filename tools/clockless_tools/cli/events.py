"""`clockless events` (`make events`): events/<function>/*.json written, or checked, from each
schedule's Input."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from clockless_tools.cli.common import RUN_LOCALLY, TemplateOption, fail, shown, stderr, stdout, writable, write_error
from clockless_tools.template.events import check_events, write_events
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError
from clockless_tools.template.model import Template

app = typer.Typer()


@app.command(rich_help_panel=RUN_LOCALLY)
def events(
    check: Annotated[bool, typer.Option("--check", help="Only check: exit 1 naming drifted files and keys.")] = False,
    directory: Annotated[
        Path | None, typer.Option("--dir", help="The events folder (default: events/). E.g. --dir /tmp/events")
    ] = None,
    template: TemplateOption = DEFAULT_TEMPLATE,
) -> None:
    """Write (or check) events/<function>/{tick,retry,malformed}.json from each schedule's Input."""
    try:
        tpl = Template.load(template)
        folder = directory or tpl.root / "events"
        if check:
            problems = check_events(tpl, folder)
        else:
            changed = write_events(tpl, writable(folder, "--dir", folder=True))
    except TemplateError as error:
        raise fail(str(error)) from None
    except OSError as error:
        raise write_error(folder, "--dir", error) from None
    if check:
        for problem in problems:
            stderr.print(escape(problem), highlight=False, soft_wrap=True)
        if problems:
            raise typer.Exit(code=1)
        stdout.print(f"{shown(folder)} matches {shown(tpl.path)}", highlight=False)
        return
    for path in changed:
        stdout.print(f"wrote {shown(path)}", highlight=False)
    if not changed:
        stdout.print(f"{shown(folder)} is up to date", highlight=False)
