"""`clockless status --grid` / `--html`: every tick of the window at a glance, per job.

Jobs that tick hourly or more often are drawn days x hours, slower ones weeks x days. Each cell is
one slot of the clock with the state of its tick (the worst, when several ticks share a slot).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from clockless import format_scheduled_time
from clockless.ledger import STATUS_FAILED, STATUS_SKIPPED, STATUS_STARTED, STATUS_SUCCEEDED
from clockless_tools.operations.pause import is_paused_at, job_pauses
from clockless_tools.operations.status import expected_ticks
from clockless_tools.operations.targets import JobTarget
from clockless_tools.template.model import Template


class TickState(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RUNNING = "running"
    MISSED = "missed"
    SKIPPED = "skipped"
    PAUSED = "paused"
    NOT_DUE = "not yet due"
    NONE = "no tick"


# Worst first: a slot shows the worst of its ticks.
SEVERITY = [
    TickState.FAILED,
    TickState.MISSED,
    TickState.RUNNING,
    TickState.PAUSED,
    TickState.SKIPPED,
    TickState.SUCCEEDED,
    TickState.NOT_DUE,
    TickState.NONE,
]
# Terminal colour (rich style), plain-text letter, HTML colour.
STYLE = {
    TickState.SUCCEEDED: ("green", "S", "#2e7d32"),
    TickState.FAILED: ("bold red", "F", "#c62828"),
    TickState.RUNNING: ("cyan", "R", "#0277bd"),
    TickState.MISSED: ("bold magenta", "M", "#ad1457"),
    TickState.SKIPPED: ("yellow", "K", "#f9a825"),
    TickState.PAUSED: ("blue", "P", "#5c6bc0"),
    TickState.NOT_DUE: ("dim", ".", "#e0e0e0"),
    TickState.NONE: ("", " ", "#ffffff"),
}
_LEDGER_STATE = {
    STATUS_SUCCEEDED: TickState.SUCCEEDED,
    STATUS_FAILED: TickState.FAILED,
    STATUS_STARTED: TickState.RUNNING,
    STATUS_SKIPPED: TickState.SKIPPED,
}


@dataclass(frozen=True)
class Grid:
    job: str
    rows: list[str]  # e.g. 2026-11-29, or the week's Monday
    columns: list[str]  # 00..23, or Mon..Sun
    cells: list[list[TickState]]
    times: list[list[str]]  # the slot's start, ISO-8601 UTC, for titles

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for row in self.cells:
            for state in row:
                if state is not TickState.NONE:
                    found[state.value] = found.get(state.value, 0) + 1
        return found


def _worst(states: list[TickState]) -> TickState:
    return min(states, key=SEVERITY.index) if states else TickState.NONE


def job_grid(template: Template, target: JobTarget, job: str, *, now: datetime, window: timedelta) -> Grid:
    spec = target.schedule_spec(job)
    ledger = target.ledger()
    hourly = len(expected_ticks(spec, now - timedelta(days=2), now)) >= 24
    slot = timedelta(hours=1) if hourly else timedelta(days=1)
    row_span = timedelta(days=1) if hourly else timedelta(days=7)
    start = (now - window).replace(hour=0, minute=0, second=0, microsecond=0)
    if not hourly:
        start -= timedelta(days=start.weekday())
    end = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    if not hourly:
        end += timedelta(days=(7 - end.weekday()) % 7)
    entries = {e.scheduled_time: e.status for e in ledger.entries(job, start, end)}
    _, intervals = job_pauses(target, job)

    paused_now = is_paused_at(intervals, now)

    def state(tick: datetime) -> TickState:
        if tick < now - window:
            return TickState.NONE  # before the window: not looked at
        if tick > now:
            return TickState.PAUSED if paused_now else TickState.NOT_DUE
        if tick in entries:
            return _LEDGER_STATE.get(entries[tick], TickState.RUNNING)
        return TickState.PAUSED if is_paused_at(intervals, tick) else TickState.MISSED

    per_slot: dict[datetime, list[TickState]] = {}
    for tick in expected_ticks(spec, start, end):
        slot_start = start + slot * ((tick - start) // slot)
        per_slot.setdefault(slot_start, []).append(state(tick))
    columns = [f"{h:02d}" for h in range(24)] if hourly else ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    rows, cells, times = [], [], []
    row_start = start
    while row_start < end:
        rows.append(f"{row_start:%Y-%m-%d}")
        slots = [row_start + slot * i for i in range(len(columns))]
        cells.append([_worst(per_slot.get(s, [])) for s in slots])
        times.append([format_scheduled_time(s) for s in slots])
        row_start += row_span
    return Grid(job=job, rows=rows, columns=columns, cells=cells, times=times)


def render_text(grid: Grid, *, colour: bool) -> str:
    """The grid as rich markup (colour) or plain letters (pipes, CI), with a legend."""
    width = max(len(r) for r in grid.rows) if grid.rows else 10
    lines = [f"{grid.job}  (UTC; columns: {'hours' if len(grid.columns) == 24 else 'days'})"]
    lines.append(" " * width + "  " + " ".join(c[:2].rjust(2) for c in grid.columns))
    for label, row in zip(grid.rows, grid.cells, strict=True):
        cells = []
        for state in row:
            style, letter, _ = STYLE[state]
            mark = "■" if colour and state is not TickState.NONE else letter
            cells.append(f"[{style}] {mark}[/]" if colour and style else f" {mark}")
        lines.append(label.ljust(width) + " " + " ".join(cells))
    legend = []
    for state in SEVERITY[:-1]:
        style, letter, _ = STYLE[state]
        legend.append(f"[{style}]■[/] {state.value}" if colour else f"{letter} {state.value}")
    lines.append("legend: " + ", ".join(legend))
    return "\n".join(lines)


def render_html(grids: list[Grid], *, title: str) -> str:
    """A self-contained page (inline CSS, no script, no fetch) with one table per job."""
    legend = "".join(
        f'<li><span class="cell" style="background:{STYLE[s][2]}"></span>{html.escape(s.value)}</li>'
        for s in SEVERITY[:-1]
    )
    tables = []
    for grid in grids:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in grid.columns)
        body = []
        for label, row, times in zip(grid.rows, grid.cells, grid.times, strict=True):
            cells = "".join(
                f'<td class="cell" data-state="{html.escape(s.value)}" style="background:{STYLE[s][2]}" '
                f'title="{html.escape(t)}: {html.escape(s.value)}"></td>'
                for s, t in zip(row, times, strict=True)
            )
            body.append(f"<tr><th>{html.escape(label)}</th>{cells}</tr>")
        tables.append(
            f'<section><h2>{html.escape(grid.job)}</h2><table class="grid" data-job="{html.escape(grid.job)}">'
            f"<tr><th></th>{head}</tr>{''.join(body)}</table></section>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em}table.grid{border-collapse:separate;border-spacing:2px}"
        "th{font-weight:normal;font-size:12px;padding:0 4px;text-align:right}"
        ".cell{display:inline-block;width:16px;height:16px;border-radius:3px;padding:0}"
        "td.cell{display:table-cell}ul.legend{list-style:none;padding:0;display:flex;gap:1em}"
        "ul.legend li{display:flex;align-items:center;gap:4px}"
        f"</style></head><body><h1>{html.escape(title)}</h1><ul class=legend>{legend}</ul>"
        f"{''.join(tables)}</body></html>"
    )
