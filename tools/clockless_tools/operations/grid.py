"""`clockless status` / `--html`: every tick of the window at a glance, per job.

Jobs that tick hourly or more often are drawn days x hours, slower ones weeks x days. Each cell is
one slot of the clock with the state of its tick (the worst, when several ticks share a slot); a
row with no tick of the window is left out.

The page's colours are Okabe and Ito's palette ("Color Universal Design", 2008), chosen to stay
apart for protanopes, deuteranopes and tritanopes; tests/unit/test_status_palette.py simulates each
(Machado et al. 2009) and checks the distances. Every cell also carries its letter: colour is never
the only cue.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from clockless import format_scheduled_time
from clockless.ledger import STATUS_FAILED, STATUS_SKIPPED, STATUS_STARTED, STATUS_SUCCEEDED
from clockless.overlap import STATUS_BUFFERED
from clockless_tools.operations.pause import is_paused_at, job_pauses
from clockless_tools.operations.status import expected_ticks, failed_items_text, has_failures
from clockless_tools.operations.targets import JobTarget
from clockless_tools.template.model import Template


class TickState(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    FAILING = "failing"  # started, and a fanned-out partition retrying or dead-lettered
    RUNNING = "running"
    # held back by the job's overlap policy until the tick before it settles (clockless.overlap)
    BUFFERED = "buffered"
    MISSED = "missed"
    SKIPPED = "skipped"
    PAUSED = "paused"
    NOT_DUE = "not yet due"
    NONE = "no tick"


# Worst first: a slot shows the worst of its ticks.
SEVERITY = [
    TickState.FAILED,
    TickState.FAILING,
    TickState.MISSED,
    TickState.RUNNING,
    TickState.BUFFERED,
    TickState.PAUSED,
    TickState.SKIPPED,
    TickState.SUCCEEDED,
    TickState.NOT_DUE,
    TickState.NONE,
]
# Plain-text letter, HTML colour (Okabe and Ito's palette, with a grey for buffered), the letter's colour
# on it. Every state has its own letter and its own colour: the letter alone reads without colour
# (NO_COLOR, TERM=dumb, a pipe, a printout), the colour is an addition. The terminal draws the same
# pair (`terminal_style`), so what the page and the terminal show agree.
STYLE = {
    TickState.SUCCEEDED: ("S", "#009E73", "#000000"),
    TickState.FAILED: ("F", "#D55E00", "#000000"),
    TickState.FAILING: ("X", "#E69F00", "#000000"),
    TickState.RUNNING: ("R", "#56B4E9", "#000000"),
    TickState.BUFFERED: ("B", "#555555", "#ffffff"),
    TickState.MISSED: ("M", "#CC79A7", "#000000"),
    TickState.SKIPPED: ("K", "#F0E442", "#000000"),
    TickState.PAUSED: ("P", "#0072B2", "#ffffff"),
    TickState.NOT_DUE: (".", "#e0e0e0", "#000000"),
    TickState.NONE: (" ", "#ffffff", "#000000"),
}


def terminal_style(state: TickState) -> str:
    """The cell's rich style: its letter's colour on its own (rich reduces it to what the terminal has)."""
    _, background, ink = STYLE[state]
    return "" if state is TickState.NONE else f"bold {ink} on {background}"


_LEDGER_STATE = {
    STATUS_SUCCEEDED: TickState.SUCCEEDED,
    STATUS_FAILED: TickState.FAILED,
    STATUS_STARTED: TickState.RUNNING,
    STATUS_SKIPPED: TickState.SKIPPED,
    STATUS_BUFFERED: TickState.BUFFERED,
}


@dataclass(frozen=True)
class Grid:
    job: str
    rows: list[str]  # e.g. 2026-11-29, or the week's Monday
    columns: list[str]  # 00..23, or Mon..Sun
    cells: list[list[TickState]]
    # Per cell, its ticks at their own times with their states (`2026-11-30T14:00:00Z: succeeded`),
    # or the slot's start when it has no tick: the page's tooltips.
    times: list[list[str]]
    # The job's overlap policy (clockless.overlap), as its code declares it; None: not known here.
    overlap: str | None = None

    @property
    def hourly(self) -> bool:
        return len(self.columns) == 24

    @property
    def header(self) -> str:
        """What the grid's title says beside the job: its zone, its columns, its overlap policy."""
        policy = "" if self.overlap is None else f"; overlap: {self.overlap}"
        return f"UTC; columns: {'hours' if self.hourly else 'days'}{policy}"

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for row in self.cells:
            for state in row:
                if state is not TickState.NONE:
                    found[state.value] = found.get(state.value, 0) + 1
        return found


def _worst(states: list[TickState]) -> TickState:
    return min(states, key=SEVERITY.index) if states else TickState.NONE


def job_grid(
    template: Template,
    target: JobTarget,
    job: str,
    *,
    now: datetime,
    window: timedelta,
    failing: Collection[datetime] = (),
    overlap: str | None = None,
) -> Grid:
    """The job's grid; `failing`: started ticks whose fanned-out partitions fail (status's progress)."""
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
    found = ledger.entries(job, start, end)
    entries = {e.scheduled_time: e.status for e in found}
    # A tick with failed items: its tooltip says how many and the first keys.
    failed_items = {e.scheduled_time: failed_items_text(e) for e in found if has_failures(e)}
    _, intervals = job_pauses(target, job)

    paused_now = is_paused_at(intervals, now)

    def state(tick: datetime) -> TickState:
        if tick < now - window:
            return TickState.NONE  # before the window: not looked at
        if tick > now:
            return TickState.PAUSED if paused_now else TickState.NOT_DUE
        if tick in entries:
            if tick in failing and entries[tick] == STATUS_STARTED:
                return TickState.FAILING
            return _LEDGER_STATE.get(entries[tick], TickState.RUNNING)
        return TickState.PAUSED if is_paused_at(intervals, tick) else TickState.MISSED

    per_slot: dict[datetime, list[tuple[datetime, TickState]]] = {}
    for tick in expected_ticks(spec, start, end):
        slot_start = start + slot * ((tick - start) // slot)
        per_slot.setdefault(slot_start, []).append((tick, state(tick)))
    columns = [f"{h:02d}" for h in range(24)] if hourly else ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    rows, cells, times = [], [], []
    row_start = start
    while row_start < end:
        slots = [row_start + slot * i for i in range(len(columns))]
        row = [_worst([s for _, s in per_slot.get(s, [])]) for s in slots]
        if any(cell is not TickState.NONE for cell in row):  # a row of no tick in the window: left out
            rows.append(f"{row_start:%Y-%m-%d}")
            cells.append(row)
            times.append([_tip(s, per_slot.get(s, []), failed_items) for s in slots])
        row_start += row_span
    return Grid(job=job, rows=rows, columns=columns, cells=cells, times=times, overlap=overlap)


def _tip(slot_start: datetime, ticks: list[tuple[datetime, TickState]], notes: Mapping[datetime, str]) -> str:
    shown = [(t, s) for t, s in ticks if s is not TickState.NONE]
    if not shown:
        return f"{format_scheduled_time(slot_start)}: no tick"
    return "; ".join(
        f"{format_scheduled_time(t)}: {s.value}" + (f" ({notes[t]})" if t in notes else "") for t, s in shown
    )


def render_text(grid: Grid, *, colour: bool, max_width: int | None = None) -> str:
    """The grid with a letter in every cell and a legend, as rich markup: with `colour`, each letter
    on its state's colour as well (a console without colour prints the same letters). Rows wider than
    `max_width` (an 80-column terminal) are labelled by month and day, so none wraps."""
    cells = 3 * len(grid.columns) - 1
    labels = grid.rows
    if max_width is not None and labels and max(len(r) for r in labels) + 2 + cells > max_width:
        labels = [label[5:] if len(label) == 10 else label for label in labels]  # 2026-11-29 -> 11-29
    width = max(len(r) for r in labels) if labels else 10
    lines = [f"{grid.job}  ({grid.header})"]
    lines.append(" " * width + "  " + " ".join(c[:2].rjust(2) for c in grid.columns))
    for label, row in zip(labels, grid.cells, strict=True):
        lines.append(label.ljust(width) + " " + " ".join(_mark(state, colour=colour) for state in row))
    lines += _legend(colour=colour, max_width=max_width)
    return "\n".join(lines)


def _legend(*, colour: bool, max_width: int | None) -> list[str]:
    """`legend: F failed, X failing, ...`, in as many lines as `max_width` needs (measured without markup)."""
    states = SEVERITY[:-1]
    pieces = [
        (f"{_mark(state, colour=colour).strip()} {state.value}", f"{STYLE[state][0]} {state.value}") for state in states
    ]
    prefix = "legend: "
    lines: list[str] = []
    markup, length = prefix, len(prefix)
    for i, (piece, plain) in enumerate(pieces):
        comma = "," if i < len(pieces) - 1 else ""
        needed = len(plain) + len(comma) + (0 if length == len(prefix) else 1)
        if max_width is not None and length > len(prefix) and length + needed > max_width:
            lines.append(markup)
            markup, length = " " * len(prefix), len(prefix)
            needed = len(plain) + len(comma)
        markup += ("" if length == len(prefix) else " ") + piece + comma
        length += needed
    lines.append(markup)
    return lines


def _mark(state: TickState, *, colour: bool) -> str:
    letter = STYLE[state][0]
    style = terminal_style(state)
    return f"[{style}] {letter}[/]" if colour and style else f" {letter}"
