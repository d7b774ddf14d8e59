"""What every command shares: the consoles, the one way of reporting bad input, the template
option and the time parsing of `--from`, `--to`, `--at`."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from clockless import MalformedTickError, parse_scheduled_time
from clockless_tools.template.loader import PROJECT_ROOT, TemplateError
from clockless_tools.template.model import Template


def _width(stream: TextIO) -> int | None:
    """A terminal's own width; in a pipe or CI wide enough that no table is cut or wrapped."""
    return None if stream.isatty() else _PIPE_WIDTH


_PIPE_WIDTH = 1000
# Tables and reports.
stdout = Console(width=_width(sys.stdout))
stderr = Console(stderr=True, width=_width(sys.stderr))
# Lines that must stay one line however long (violations, figures): no wrapping, no highlighting.
line_stdout = Console(highlight=False, soft_wrap=True)
line_stderr = Console(stderr=True, highlight=False, soft_wrap=True)

TemplateOption = Annotated[Path, typer.Option("--template", "-t", help="The SAM template. E.g. -t template.yaml")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text, for scripts. E.g. --json | jq .")]

# The help panels `clockless --help` groups its commands in.
RUN_LOCALLY = "Run locally"
OPERATE = "Operate a deployment or the local runtime"
CHECK = "Check the template and the code"
MEASURE = "Measure"
CREATE = "Add to the project"


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


@contextlib.contextmanager
def function_output(log_path: Path | None) -> Iterator[TextIO]:
    """Everything the functions run in this process write (Powertools' logs, EMF metrics, warnings),
    at the file-descriptor level and through sys.stdout/sys.stderr, appended to `log_path`; yields a
    stream to the terminal's stderr for progress. With no `log_path` they go to stderr, as `invoke`."""
    if log_path is None:
        yield sys.stderr
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log_path.open("a", encoding="utf-8") as log, os.fdopen(os.dup(2), "w", encoding="utf-8") as terminal:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield terminal
        finally:
            log.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
