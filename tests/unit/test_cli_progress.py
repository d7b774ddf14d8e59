"""A long step speaks when piped: a line every few seconds with each task's done of a fixed total."""

from __future__ import annotations

import io
import time

from rich.console import Console

from clockless_tools.cli.progress import StepProgress


def _wait_for(buffer: io.StringIO, text: str, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while text not in buffer.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    return buffer.getvalue()


def test_piped_progress_prints_a_line_per_beat_with_every_tasks_done_of_its_total() -> None:
    # Given a console that is not a terminal (a pipe, CI's log)
    buffer = io.StringIO()
    steps = StepProgress(Console(file=buffer, force_terminal=False, width=1000), every=0.02)

    # When two tasks move while the step runs
    with steps.shown():
        steps.note("simulating a day")
        steps.update("simulation", 3, 25)
        steps.update("reference", 1, 25)
        printed = _wait_for(buffer, "reference 1/25 ticks")
        steps.update("simulation", 25, 25)
        printed = _wait_for(buffer, "simulation 25/25 ticks")

    # Then each beat is one plain line naming both, with the totals fixed up front
    lines = printed.splitlines()
    assert lines[0] == "simulating a day"
    assert any(line.startswith("simulation 3/25 ticks, reference 1/25 ticks (") for line in lines), lines
    assert any(line.startswith("simulation 25/25 ticks, reference 1/25 ticks (") for line in lines), lines
    assert "\r" not in printed  # nothing redrawn in place
    assert "\x1b" not in printed


def test_on_a_terminal_the_bars_leave_no_lines_behind() -> None:
    buffer = io.StringIO()
    steps = StepProgress(Console(file=buffer, force_terminal=True, width=100), every=0.01)

    with steps.shown():
        steps.update("simulation", 1, 2)
        time.sleep(0.05)

    assert "simulation 1/2 ticks," not in buffer.getvalue()
