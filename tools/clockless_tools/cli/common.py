"""What every command shares: the consoles, the one way of reporting bad input, the template
option and the time parsing of `--from`, `--to`, `--at`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from clockless import MalformedTickError, parse_scheduled_time
from clockless_tools.template.loader import PROJECT_ROOT, TemplateError
from clockless_tools.template.model import Template

# Tables and reports.
stdout = Console()
stderr = Console(stderr=True)
# Lines that must stay one line however long (violations, figures): no wrapping, no highlighting.
line_stdout = Console(highlight=False, soft_wrap=True)
line_stderr = Console(stderr=True, highlight=False, soft_wrap=True)

TemplateOption = Annotated[Path, typer.Option("--template", "-t", help="The SAM template.")]

# The help panels `clockless --help` groups its commands in.
RUN_LOCALLY = "Run locally"
OPERATE = "Operate a deployment or the local runtime"
CHECK = "Check the template and the code"
MEASURE = "Measure"


def fail(message: str) -> typer.Exit:
    """Bad input: `error: <message>` on stderr, one line however long, printed as written; exit 2."""
    stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def load_template(path: Path) -> Template:
    try:
        return Template.load(path)
    except TemplateError as error:
        raise fail(str(error)) from None


def parse_time(value: str, option: str) -> datetime:
    """A UTC time as a scheduler writes it, or a clear error naming the option."""
    try:
        return parse_scheduled_time(value, field=option)
    except MalformedTickError as error:
        raise fail(f"{option} {error.problem} (e.g. 2026-11-28T14:00:00Z)") from None


def shown(path: Path) -> str:
    """A path as the user reads it: relative to the project when inside it."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)
