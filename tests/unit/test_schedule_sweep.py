"""A sweep (marked slow; `pytest -m slow`): random cron field sets in random zones, the engine's
ticks against a minute-by-minute oracle that knows nothing of cron.py: every UTC minute whose
local wall-clock time matches the sets, counted once where clocks go back (its first occurrence)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clockless.schedule.expressions import ScheduleSpec

ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Adelaide", "Australia/Lord_Howe", "Asia/Kolkata"]
# Windows around DST changes in those zones, and one ordinary week.
STARTS = [
    datetime(2027, 3, 13, tzinfo=UTC),
    datetime(2027, 11, 6, tzinfo=UTC),
    datetime(2027, 4, 2, tzinfo=UTC),
    datetime(2027, 10, 1, tzinfo=UTC),
    datetime(2027, 3, 27, tzinfo=UTC),
    datetime(2027, 10, 30, tzinfo=UTC),
    datetime(2028, 2, 26, tzinfo=UTC),
]


def _subset(low: int, high: int, most: int) -> st.SearchStrategy[frozenset[int]]:
    return st.frozensets(st.integers(low, high), min_size=1, max_size=most)


def _aws_weekday(day: datetime) -> int:
    return (day.weekday() + 1) % 7 + 1


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    minutes=_subset(0, 59, 4),
    hours=_subset(0, 23, 6),
    days=st.one_of(st.none(), _subset(1, 31, 8)),
    weekdays=_subset(1, 7, 3),
    zone=st.sampled_from(ZONES),
    start=st.sampled_from(STARTS),
)
def test_the_engine_matches_a_minute_by_minute_oracle(
    *,
    minutes: frozenset[int],
    hours: frozenset[int],
    days: frozenset[int] | None,
    weekdays: frozenset[int],
    zone: str,
    start: datetime,
) -> None:
    def text(values: frozenset[int]) -> str:
        return ",".join(str(v) for v in sorted(values))

    dom, dow = (text(days), "?") if days is not None else ("?", text(weekdays))
    spec = ScheduleSpec.of(f"cron({text(minutes)} {text(hours)} {dom} * {dow} *)", timezone=zone)
    end = start + timedelta(days=4)
    local = ZoneInfo(zone)

    expected = []
    seen_walls = set()
    moment = start - timedelta(days=1)  # walls seen the day before decide "first occurrence"
    while moment < end:
        wall = moment.astimezone(local).replace(tzinfo=None)
        first = wall not in seen_walls
        seen_walls.add(wall)
        day_ok = wall.day in days if days is not None else _aws_weekday(wall) in weekdays
        if moment >= start and first and wall.minute in minutes and wall.hour in hours and day_ok:
            expected.append(moment)
        moment += timedelta(minutes=1)

    assert spec.ticks_between(start, end) == expected
