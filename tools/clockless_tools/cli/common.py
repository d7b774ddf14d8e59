"""What every command shares: the consoles, the one way of reporting bad input (naming the make
variable when run by `make`), the exit codes, the template option, the time parsing of `--from`,
`--to`, `--at`, where functions' logs go, and click's message for an unknown option."""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated, TextIO

import typer
from rich.console import Console
from rich.markup import escape
from typer import rich_utils
from typer._click.exceptions import ClickException, NoSuchOption  # Typer (0.29) parses with its own click
from typer.core import TyperOption

from clockless import MalformedTickError, format_scheduled_time, parse_scheduled_time
from clockless.tick import parse_tick_time
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


# Exit codes every operating command shares (docs/operating-commands.md lists them).
EXIT_OK = 0
EXIT_FOUND = 1  # the command ran and found something to act on: a missing tick, a dead letter
EXIT_REFUSED = 2  # bad input, an unreachable target, a function that failed
# The tick ran (or had run) and is not done: it ended failed, or it was fanned out and its
# partitions are failing or stuck.
EXIT_PARTITIONS_FAILING = 3
EXIT_NOT_WRITTEN = 4  # the command's result was printed, but a file it was asked to write could not be
EXIT_PAUSED = 5  # the job is paused: nothing ran (--override-pause runs it anyway)

# Set by the Makefile on the commands it runs for a target, so errors name what the user typed there.
UNDER_MAKE = "CLOCKLESS_UNDER_MAKE"
MAKE_VARIABLES = {
    "--stack": "STACK=",
    "--from": "FROM=",
    "--to": "TO=",
    "--policy": "POLICY=",
    "--event": "EVENT=",
    "-e": "EVENT=",
    "--port": "PORT=",
}


def flag(option: str) -> str:
    """The option as the user gave it: `--stack`, or `STACK=` when `make` runs the command."""
    if os.environ.get(UNDER_MAKE) == "1":
        return MAKE_VARIABLES.get(option, option)
    return option


def fail(message: str, *, code: int = EXIT_REFUSED) -> typer.Exit:
    """Bad input: `error: <message>` on stderr, one line however long, printed as written; exit 2."""
    stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code=code)


def load_template(path: Path) -> Template:
    try:
        return Template.load(path)
    except TemplateError as error:
        raise fail(str(error)) from None


TIME_EXAMPLE = "2026-11-28T14:00:00Z"
_HAS_EXAMPLE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?Z")


def parse_time(value: str, option: str, *, tick: bool = False) -> datetime:
    """A time with its zone (`Z` or an offset), converted to UTC, or one clear error naming the
    option (or its make variable) with one example. `tick`: also a whole minute, refused otherwise
    with the sentence the trigger and the kit give a scheduled time that is not one."""
    try:
        return parse_tick_time(value, field=option) if tick else parse_scheduled_time(value, field=option)
    except MalformedTickError as error:
        problem = error.problem
        # One example per line: the kit's message may carry its own.
        example = "" if _HAS_EXAMPLE.search(problem) else f" (e.g. {TIME_EXAMPLE})"
        raise fail(f"{flag(option)} {problem}{example}") from None


def utc(moment: datetime) -> str:
    """A parsed time echoed as it is used: in UTC, whatever offset it was given with."""
    return format_scheduled_time(moment)


def shown(path: Path) -> str:
    """A path as the user reads it: relative to the project when inside it."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def writable(path: Path, option: str, *, folder: bool = False) -> Path:
    """`path` as a command will write it (a file, or with `folder` a folder it writes files into),
    refused before anything is done when it cannot be: one line naming the option. Inside the project
    the folders a write needs are created; outside it nothing is but what the option names, so a
    missing parent is refused (`--log /nonexistent/dir/x.log` creates no `/nonexistent/dir`)."""
    what = "folder" if folder else "file"
    if path.exists():
        if path.is_dir() != folder:
            raise fail(f"{flag(option)} {path}: {'not a folder' if folder else 'is a folder'}; name a {what}")
        if not os.access(path, os.W_OK):
            raise fail(f"{flag(option)} {path}: not writable")
        return path
    existing = next(parent for parent in path.absolute().parents if parent.exists())
    if not existing.is_dir():
        raise fail(f"{flag(option)} {path}: {existing} is not a folder")
    if existing != path.absolute().parent and not _in_project(path):
        raise fail(
            f"{flag(option)} {path}: no folder {path.parent} (outside the project only the {what} itself is created)"
        )
    if not os.access(existing, os.W_OK):
        raise fail(f"{flag(option)} {path}: {existing} is not writable")
    return path


def _in_project(path: Path) -> bool:
    return path.resolve().is_relative_to(PROJECT_ROOT)


def write_error(path: Path, option: str, error: OSError) -> typer.Exit:
    """A write that failed after `writable` passed it (a full disk, /proc): one line naming the option."""
    return fail(f"{flag(option)} {path}: cannot write: {error.strerror or error}")


FUNCTION_LOGS = PROJECT_ROOT / ".clockless"


def function_log(command: str) -> Path:
    """Where a command's functions write their logs and metrics by default (`--verbose`: stderr)."""
    return FUNCTION_LOGS / f"{command}-function-output.log"


def print_function_log(log: str, *, note: str = "") -> None:
    """Where the functions' logs and metrics went, by one rule for every command that runs functions
    (`run-now`, `backfill`, `invoke`, `simulate`): one line on stderr, so stdout is only the
    command's result (a function's response, a report) and can be piped."""
    line_stderr.print(f"function logs and metrics: {log}{note}")


@contextlib.contextmanager
def function_output(log_path: Path | None) -> Iterator[TextIO]:
    """Everything the functions run in this process write (Powertools' logs, EMF metrics, warnings),
    at the file-descriptor level and through sys.stdout/sys.stderr, appended to `log_path`; yields a
    stream to the terminal's stderr for progress. With no `log_path` they go to stderr, as `invoke`."""
    if log_path is None:
        yield sys.stderr
        return
    writable(log_path, "--log")
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)  # only inside the project: `writable`
        opened = log_path.open("a", encoding="utf-8")
    except OSError as error:
        raise write_error(log_path, "--log", error) from None
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with opened as log, os.fdopen(os.dup(2), "w", encoding="utf-8") as terminal:
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


def _no_such_option(self: NoSuchOption) -> str:
    """`No such option: --jsno. Did you mean --json?`, or the command's options when none is near
    (click's own suggestion offers whatever is least unlike, e.g. --json for --since)."""
    command = self.ctx.command if self.ctx is not None else None
    if command is None:
        return _click_no_such_option(self)
    options = sorted(
        {
            name
            for param in command.params
            if isinstance(param, TyperOption) and not param.hidden
            for name in (*param.opts, *param.secondary_opts)
            if name.startswith("--")
        }
        | {"--help"}
    )
    near = difflib.get_close_matches(self.option_name, options, n=1, cutoff=0.7)
    if near:
        return f"No such option: {self.option_name}. Did you mean {near[0]}?"
    path = self.ctx.command_path if self.ctx is not None else command.name
    return f"No such option: {self.option_name}. {path} takes: {', '.join(options)}"


# tests/unit/test_cli_help.py notices if a Typer upgrade moves the class or its message.
_click_no_such_option = NoSuchOption.format_message
NoSuchOption.format_message = _no_such_option  # type: ignore[method-assign]


def _one_line_usage_error(self: ClickException) -> None:
    """A usage error as every other error: `error: <what was wrong>; see `<command> --help``, one line
    on stderr, in a pipe and on a terminal alike (Typer draws a 6-7 line box around it)."""
    if self.__class__.__name__ == "NoArgsIsHelpError":
        return  # the help was printed: nothing was wrong
    ctx = getattr(self, "ctx", None)
    message = " ".join(self.format_message().split()).rstrip(".")
    see = f"; see `{ctx.command_path} --help`" if ctx is not None else ""
    line_stderr.print(f"error: {escape(message)}{escape(see)}")


# tests/unit/test_cli_help.py notices if a Typer upgrade moves or renames it.
rich_utils.rich_format_error = _one_line_usage_error
