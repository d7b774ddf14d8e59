"""Window generation: roll every due program forward until it covers the business date.

Plain Python: no boto3, no environment. The store is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo


@dataclass(frozen=True, slots=True)
class Program:
    tenant_id: str
    program_id: str
    window_length_days: int
    current_window_end: date

    def next_window(self) -> Window:
        start = self.current_window_end
        return Window(
            tenant_id=self.tenant_id,
            program_id=self.program_id,
            start_date=start,
            end_date=start + timedelta(days=self.window_length_days),
        )


@dataclass(frozen=True, slots=True)
class Window:
    """[start_date, end_date) of one program; keyed by (program, start date)."""

    tenant_id: str
    program_id: str
    start_date: date
    end_date: date


class ProgramStore(Protocol):
    def find_due_programs(self, on_or_before: date) -> Iterable[Program]:
        """Active programs whose current window ends on or before the date."""
        ...

    def roll_forward(self, program: Program, window: Window, *, tick_key: str) -> bool:
        """Create the window and advance the program atomically; False if either was already done."""
        ...


@dataclass(frozen=True, slots=True)
class WindowGenerationResult:
    business_date: date
    programs_due: int
    windows_created: int
    already_rolled: int

    def as_summary(self) -> dict[str, int | str]:
        return {
            "business_date": self.business_date.isoformat(),
            "programs_due": self.programs_due,
            "windows_created": self.windows_created,
            "already_rolled": self.already_rolled,
        }


def business_date_of(moment: datetime, operating_zones: Sequence[str]) -> date:
    """The latest local date that has begun in every operating zone at the tick.

    The schedule is chosen so that its ticks fall on one local date everywhere (`clockless
    schedules check` proves it for a year). A manual or HTTP tick at another hour may straddle
    midnight somewhere; it then takes the earlier date, so no program is rolled into a day that
    has not started for some of its users.
    """
    return min(moment.astimezone(ZoneInfo(zone)).date() for zone in operating_zones)


def windows_due(program: Program, business_date: date) -> list[Window]:
    """The windows that cover `program` up to `business_date`, oldest first: the whole catch-up
    chain of a program that missed nights, one window for a program due today, none otherwise.

    Written together with the program's roll, the chain moves it past the business date (and out
    of the due range) in one step, so one item of work is one program.
    """
    if program.window_length_days < 1:
        raise ValueError(
            f"program {program.tenant_id}/{program.program_id}: window_length_days must be at least 1, "
            f"got {program.window_length_days}"
        )
    windows: list[Window] = []
    current = program
    while current.current_window_end <= business_date:
        window = current.next_window()
        windows.append(window)
        current = replace(current, current_window_end=window.end_date)
    return windows


def generate_windows(store: ProgramStore, *, business_date: date, tick_key: str) -> WindowGenerationResult:
    """Create each due program's next windows until it is covered on `business_date`, one window
    per write: the sequential path (the deployed handler fans the tick out instead).

    A program that missed nights catches up one window at a time. A window that another run
    already created ends that program's loop: the store's conditions make a second run a no-op.
    """
    programs_due = windows_created = already_rolled = 0
    for program in store.find_due_programs(on_or_before=business_date):
        programs_due += 1
        current = program
        for window in windows_due(program, business_date):
            if not store.roll_forward(current, window, tick_key=tick_key):
                already_rolled += 1
                break
            windows_created += 1
            current = replace(current, current_window_end=window.end_date)
    return WindowGenerationResult(
        business_date=business_date,
        programs_due=programs_due,
        windows_created=windows_created,
        already_rolled=already_rolled,
    )
