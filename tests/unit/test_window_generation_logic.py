from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

import pytest

from window_generation.logic import (
    Program,
    Window,
    business_date_of,
    generate_windows,
)

ZONES = ("America/New_York", "America/Los_Angeles", "America/Anchorage", "Pacific/Honolulu")


class FakeProgramStore:
    """In-memory store with the same conditions as the DynamoDB one."""

    def __init__(self, programs: Iterable[Program]) -> None:
        self.programs = {(p.tenant_id, p.program_id): p for p in programs}
        self.windows: dict[tuple[str, str, date], Window] = {}

    def find_due_programs(self, on_or_before: date) -> list[Program]:
        return [p for p in self.programs.values() if p.current_window_end <= on_or_before]

    def roll_forward(self, program: Program, window: Window, *, tick_key: str) -> bool:
        key = (program.tenant_id, program.program_id)
        stored = self.programs[key]
        window_key = (window.tenant_id, window.program_id, window.start_date)
        if window_key in self.windows or stored.current_window_end != program.current_window_end:
            return False
        self.windows[window_key] = window
        self.programs[key] = Program(*key, stored.window_length_days, window.end_date)
        return True


def test_program_that_missed_nights_catches_up_window_by_window() -> None:
    store = FakeProgramStore([Program("t", "p", 7, date(2027, 1, 1))])

    result = generate_windows(store, business_date=date(2027, 1, 16), tick_key="k")

    assert result.windows_created == 3
    assert sorted(w.start_date for w in store.windows.values()) == [
        date(2027, 1, 1),
        date(2027, 1, 8),
        date(2027, 1, 15),
    ]
    assert store.programs[("t", "p")].current_window_end == date(2027, 1, 22)


def test_program_ending_on_the_business_date_gets_its_next_window() -> None:
    store = FakeProgramStore([Program("t", "p", 14, date(2027, 3, 14))])

    result = generate_windows(store, business_date=date(2027, 3, 14), tick_key="k")

    assert result.windows_created == 1
    assert store.programs[("t", "p")].current_window_end == date(2027, 3, 28)


def test_second_run_creates_nothing() -> None:
    store = FakeProgramStore([Program("t", "p", 7, date(2027, 1, 1)), Program("t", "q", 7, date(2027, 2, 1))])
    generate_windows(store, business_date=date(2027, 1, 10), tick_key="k")

    again = generate_windows(store, business_date=date(2027, 1, 10), tick_key="k")

    assert again.windows_created == 0
    assert again.programs_due == 0


def test_a_program_rolled_by_a_concurrent_run_is_counted_not_duplicated() -> None:
    stale = Program("t", "p", 7, date(2027, 1, 1))
    store = FakeProgramStore([stale])
    generate_windows(store, business_date=date(2027, 1, 1), tick_key="other run")

    class StaleRead(FakeProgramStore):
        def find_due_programs(self, on_or_before: date) -> list[Program]:
            return [stale]  # what a run that listed before the other committed still holds

    racing = StaleRead([])
    racing.programs, racing.windows = store.programs, store.windows
    result = generate_windows(racing, business_date=date(2027, 1, 1), tick_key="k")

    assert result.already_rolled == 1
    assert result.windows_created == 0
    assert len(store.windows) == 1


@pytest.mark.parametrize(
    ("utc", "expected"),
    [
        (datetime(2027, 3, 14, 14, 0, tzinfo=UTC), date(2027, 3, 14)),  # US spring-forward day
        (datetime(2027, 11, 7, 14, 0, tzinfo=UTC), date(2027, 11, 7)),  # US fall-back day
        (datetime(2027, 1, 1, 14, 0, tzinfo=UTC), date(2027, 1, 1)),
    ],
)
def test_business_date_is_the_local_date_in_every_zone(utc: datetime, expected: date) -> None:
    assert business_date_of(utc, ZONES) == expected


def test_a_tick_on_two_local_dates_takes_the_date_every_zone_has_reached() -> None:
    # 06:00Z on 2 January: 01:00 in New York, still 20:00 on 1 January in Honolulu
    assert business_date_of(datetime(2027, 1, 2, 6, 0, tzinfo=UTC), ZONES) == date(2027, 1, 1)


def test_window_is_half_open_and_as_long_as_the_program_says() -> None:
    window = Program("t", "p", 28, date(2027, 2, 1)).next_window()

    assert (window.start_date, window.end_date) == (date(2027, 2, 1), date(2027, 2, 1) + timedelta(days=28))
