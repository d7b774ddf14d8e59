"""Progress of a long step, on a terminal and in a pipe alike.

On a terminal: rich's bars, redrawn in place and gone when the step ends. Piped (CI, `| tee`): a
plain line every `every` seconds, one for all tasks (`simulation 12/25 ticks, reference 10/25
ticks (20 s)`), so a log shows the step is alive and how far it got, and nothing redraws. Totals
are fixed up front by the caller, so a line's `of total` never moves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

EVERY_SECONDS: Final = 10.0


@dataclass
class _Task:
    unit: str
    done: int
    total: int


class StepProgress:
    """`update(name, done, total)` from any thread; `note(message)` prints a line above the bars."""

    def __init__(self, console: Console, *, every: float = EVERY_SECONDS) -> None:
        self.console = console
        self.every = every
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._bar: Progress | None = None
        self._bar_tasks: dict[str, TaskID] = {}
        self._stop = threading.Event()

    def update(self, name: str, done: int, total: int, *, unit: str = "ticks") -> None:
        with self._lock:
            self._tasks[name] = _Task(unit, done, total)
            if self._bar is not None:
                if name not in self._bar_tasks:
                    self._bar_tasks[name] = self._bar.add_task(f"{name}: {unit}", total=total)
                self._bar.update(self._bar_tasks[name], completed=done, total=total)

    def note(self, message: str) -> None:
        console = self._bar.console if self._bar is not None else self.console
        console.print(f"[dim]{escape(message)}[/]", highlight=False, soft_wrap=True)

    def line(self) -> str:
        """What a piped run prints every `every` seconds."""
        with self._lock:
            parts = [f"{name} {task.done}/{task.total} {task.unit}" for name, task in self._tasks.items()]
        elapsed = time.monotonic() - self.started
        return f"{', '.join(parts) or 'starting'} ({elapsed:.0f} s)"

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.console.print(escape(self.line()), highlight=False, soft_wrap=True)

    @contextmanager
    def shown(self) -> Iterator[StepProgress]:
        if self.console.is_terminal:
            with Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            ) as bar:
                self._bar = bar
                try:
                    yield self
                finally:
                    self._bar = None
            return
        beat = threading.Thread(target=self._beat, name="progress-lines", daemon=True)
        beat.start()
        try:
            yield self
        finally:
            self._stop.set()
            beat.join()
