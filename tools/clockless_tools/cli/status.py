"""`clockless status`: per job the last success and failure, the next ticks, the missing ticks and
every tick of the window in a grid, in the terminal (a letter per state, colour as an addition), as
JSON, and as a self-contained HTML page."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from clockless import format_scheduled_time
from clockless_tools.cli.common import (
    EXIT_FOUND,
    EXIT_NOT_WRITTEN,
    OPERATE,
    JsonOption,
    fail,
    line_stderr,
    line_stdout,
    stdout,
)
from clockless_tools.cli.target import TargetOptions, acting_on, target_options
from clockless_tools.operations.grid import job_grid, render_text
from clockless_tools.operations.page import StatusPage, render_page
from clockless_tools.operations.spans import format_span
from clockless_tools.operations.status import (
    COLUMNS,
    JobStatus,
    fanned_out_lines,
    fit_lines,
    job_status,
    table_cells,
)

app = typer.Typer()
# A year: longer than any ledger keeps its ticks by default (LedgerRetentionDays 90), and a window an
# hourly job's grid draws in well under a second (100,000 days took 29 s and 325 MB).
MAX_WINDOW_DAYS = 366.0


@app.command("status", rich_help_panel=OPERATE)
@target_options
def status(
    window_days: Annotated[
        float,
        typer.Option(
            "--window-days",
            min=0.01,
            max=MAX_WINDOW_DAYS,
            help=f"How far back to look, in days, at most {MAX_WINDOW_DAYS:g} (a year). E.g. --window-days 2",
        ),
    ] = 7,
    as_json: JsonOption = False,
    html_file: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write a self-contained HTML page (the table, the fanned-out ticks and the grids) to attach "
            "to an incident. E.g. --html status.html",
        ),
    ] = None,
    *,
    where: TargetOptions,
) -> None:
    """Per job: last success, last failure, next ticks, and expected ticks the ledger does not show as succeeded.

    Exit 1 when a tick is missing, 2 when the target cannot be read, 4 when the --html page cannot
    be written (the table is printed all the same).
    """
    tpl, target = where.open()
    now = datetime.now(UTC)
    window = timedelta(days=window_days)
    with acting_on(target):
        statuses = [job_status(tpl, target, job, now=now, window=window) for job in sorted(tpl.jobs)]
        grids = [
            job_grid(
                tpl,
                target,
                s.job,
                now=now,
                window=window,
                failing=[tick.scheduled_time for tick in s.fanned_out if tick.failing],
                overlap=s.overlap,
            )
            for s in statuses
        ]
    page_error = None
    if html_file is not None:
        page = StatusPage(
            title=f"clockless status: {target.description}",
            target=target.description,
            generated_at=now,
            window_start=now - window,
            window_end=now,
            statuses=statuses,
            grids=grids,
        )
        try:
            html_file.write_text(render_page(page), encoding="utf-8")
        except OSError as error:
            # The table is what the operator came for: printed anyway, the page's failure said after it.
            page_error = f"cannot write the status page to {html_file}: {error.strerror or error}"
    generated = format_scheduled_time(now)
    if as_json:
        document = {
            "target": target.description,
            "generated_at": generated,
            "window": [format_scheduled_time(now - window), generated],
            "jobs": [s.as_dict() for s in statuses],
        }
        print(json.dumps(document, indent=2))
    else:
        print_status_table(statuses, title=f"clockless status: {target.description}, last {format_span(window)}")
        line_stdout.print(f"generated at {generated} (UTC)")
        for s in statuses:
            for line in fit_lines(fanned_out_lines(s), stdout.width):
                line_stdout.print(escape(line))
        colour = stdout.is_terminal and stdout.color_system is not None and not stdout.no_color
        for grid in grids:
            text = render_text(grid, colour=colour, max_width=stdout.width)
            (stdout if colour else line_stdout).print(text, highlight=False)
    if page_error is not None:
        raise fail(page_error, code=EXIT_NOT_WRITTEN)
    if html_file is not None:
        line_stderr.print(f"status page written to {html_file}")
    if any(s.missing for s in statuses):
        raise typer.Exit(code=EXIT_FOUND)


def print_status_table(statuses: list[JobStatus], *, title: str) -> None:
    """The table, as wide as its longest lines; on a terminal narrower than that (80 columns), one
    block per job, a label per line, so no header or time is cut."""
    rows = []
    for s in statuses:
        job, *cells, missing = [[escape(line) for line in lines] for lines in table_cells(s)]
        if s.paused_since is not None:
            job[1] = job[1].replace("paused", "[yellow]paused[/]", 1)
            cells[2] = [f"[yellow]{cells[2][0]}[/]"]
        missing[0] = f"[bold red]{missing[0]}[/]" if s.missing else f"[green]{missing[0]}[/]"
        rows.append([job, *cells, missing])
    widths = [
        max([len(column), *(len(Text.from_markup(line)) for row in rows for line in row[i])])
        for i, column in enumerate(COLUMNS)
    ]
    if sum(widths) + 3 * len(COLUMNS) + 1 <= stdout.width:
        table = Table(title=title)
        for column in COLUMNS:
            table.add_column(column, no_wrap=True)
        for row in rows:
            table.add_row(*("\n".join(lines) for lines in row))
        stdout.print(table)
        return
    label = max(len(column) for column in COLUMNS[1:])
    stdout.print(title, highlight=False)
    for job, *cells in rows:
        stdout.print("\n".join(f"[bold]{line}[/]" if i == 0 else f"  {line}" for i, line in enumerate(job)))
        for column, lines in zip(COLUMNS[1:], cells, strict=True):
            for i, line in enumerate(lines):
                stdout.print(f"  {column if i == 0 else '':<{label}}  {line}", highlight=False)
