"""`clockless status --html`: the page an operator attaches to an incident.

Self-contained (inline CSS, no script, nothing fetched): when it was generated and over which
window, then the picture, each job's grid in UTC (a letter in every cell beside its colour, every
cell the same width, each cell's tooltip at its ticks' own times), then the status table as the
terminal prints it (last success, last failure with its error, next ticks, missing, who paused a
job and why) and each fanned-out tick's progress, identical partition troubles one line with their
count. At a phone's width (a viewport meta; under 600 px) nothing is cut off and the picture is
whole on the screen: an hourly grid wraps each day into two rows of 12 hours, the table is one card
per job, the page is never wider than the window, and a table wider than it scrolls in its own box.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime

from clockless import format_scheduled_time
from clockless_tools.operations.grid import SEVERITY, STYLE, Grid, TickState
from clockless_tools.operations.status import COLUMNS, JobStatus, fanned_out_lines, table_cells

_CELL_PX = 22  # every cell, hourly or weekly, the same square, on a phone too

_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#111}"
    # A title naming a long target (an endpoint, a stack) wraps rather than widening the page.
    "h1{font-size:1.6em;overflow-wrap:anywhere}"
    "p.meta{margin:.2em 0;overflow-wrap:anywhere}"
    "table.status{border-collapse:collapse;margin:1em 0}"
    "table.status th,table.status td{border:1px solid #999;padding:4px 8px;text-align:left;vertical-align:top;"
    "font-size:13px;white-space:pre-line;overflow-wrap:anywhere}"
    "pre.progress{font-size:13px;background:#f4f4f4;padding:.5em;white-space:pre-wrap}"
    # A grid: its row label, then a cell per column (--cols), as CSS grid cells so a day can wrap.
    "div.grid{display:grid;grid-template-columns:auto repeat(var(--cols),"
    f"{_CELL_PX}px);gap:2px;justify-content:start;align-items:center}}"
    "div.grid .label{font-size:12px;padding:0 4px;text-align:right;white-space:nowrap}"
    f"div.grid .col{{font-size:12px;text-align:center;width:{_CELL_PX}px;overflow:hidden}}"
    f".cell{{box-sizing:border-box;width:{_CELL_PX}px;min-width:{_CELL_PX}px;max-width:{_CELL_PX}px;"
    f"height:{_CELL_PX}px;padding:0;border-radius:3px;text-align:center;font:bold 12px monospace;"
    f"line-height:{_CELL_PX}px}}"
    "span.cell{display:inline-block}"
    "ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4em 1em}"
    "ul.legend li{display:flex;align-items:center;gap:4px}"
    # Nothing wider than the window: a table too wide for it scrolls inside its own box, the rest wraps.
    "div.scroll{overflow-x:auto;max-width:100%}"
    "pre.progress{overflow-wrap:anywhere}"
    # On a phone: an hourly day in two rows of 12 hours beside its date (the header's hours too), and
    # the status table one card per job, each cell under its column's name.
    "@media (max-width:600px){body{margin:.5em}h1{font-size:1.25em}"
    f"div.grid.hourly{{grid-template-columns:auto repeat(12,{_CELL_PX}px)}}"
    "div.grid.hourly .label{grid-row:span 2}"
    "table.status,table.status tbody,table.status tr,table.status td{display:block}"
    "table.status tr:first-child{display:none}table.status tr{margin-bottom:.5em}"
    "table.status td::before{content:attr(data-column);display:block;font-weight:bold}}"
)


@dataclass(frozen=True)
class StatusPage:
    title: str
    target: str
    generated_at: datetime
    window_start: datetime
    window_end: datetime
    statuses: list[JobStatus]
    grids: list[Grid]


def _lines(lines: list[str]) -> str:
    return "<br>".join(html.escape(line) for line in lines)


def _cell(state: TickState, tip: str, tag: str = "td") -> str:
    letter, background, ink = STYLE[state]
    return (
        f'<{tag} class="cell" data-state="{html.escape(state.value)}" style="background:{background};color:{ink}" '
        f'title="{html.escape(tip)}">{html.escape(letter.strip())}</{tag}>'
    )


def _status_table(statuses: list[JobStatus]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    rows = []
    for s in statuses:
        cells = "".join(
            f'<td data-column="{html.escape(column)}">{_lines(lines)}</td>'
            for column, lines in zip(COLUMNS, table_cells(s), strict=True)
        )
        rows.append(f'<tr data-job="{html.escape(s.job)}">{cells}</tr>')
    return f'<div class="scroll"><table class="status"><tr>{head}</tr>{"".join(rows)}</table></div>'


def _grid(grid: Grid) -> str:
    # Two letters, as the terminal grid: `Mon` would widen its column past the cells'.
    head = "".join(f'<div class="col" title="{html.escape(c)}">{html.escape(c[:2])}</div>' for c in grid.columns)
    body = []
    for label, row, tips in zip(grid.rows, grid.cells, grid.times, strict=True):
        cells = "".join(_cell(state, tip, "div") for state, tip in zip(row, tips, strict=True))
        body.append(f'<div class="label row">{html.escape(label)}</div>{cells}')
    kind = "grid hourly" if grid.hourly else "grid"
    return (
        f'<section><h2>{html.escape(grid.job)} <small class="tz">({html.escape(grid.header)})</small></h2>'
        f'<div class="scroll"><div class="{kind}" data-job="{html.escape(grid.job)}" '
        f'style="--cols:{len(grid.columns)}"><div class="label">UTC</div>{head}{"".join(body)}</div></div></section>'
    )


def render_page(page: StatusPage) -> str:
    legend = "".join(
        f"<li>{_cell(state, state.value, 'span')}{html.escape(state.value)}</li>" for state in SEVERITY[:-1]
    )
    progress = [line for s in page.statuses for line in fanned_out_lines(s)]
    progress_html = (
        f'<h2>Fanned-out ticks</h2><pre class="progress">{html.escape(chr(10).join(progress))}</pre>'
        if progress
        else ""
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(page.title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(page.title)}</h1>"
        f'<p class="meta" id="generated">generated at {format_scheduled_time(page.generated_at)} (UTC)</p>'
        f'<p class="meta" id="window">window: {format_scheduled_time(page.window_start)} to '
        f"{format_scheduled_time(page.window_end)} (UTC)</p>"
        f'<p class="meta" id="target">target: {html.escape(page.target)}</p>'
        f'<ul class="legend">{legend}</ul>'
        f"{''.join(_grid(grid) for grid in page.grids)}"
        f"<h2>Status</h2>{_status_table(page.statuses)}{progress_html}</body></html>"
    )
