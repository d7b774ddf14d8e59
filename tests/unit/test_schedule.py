"""The tick engine against hand-computed tick lists, and against aws-croniter where it is the reference."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aws_croniter import AwsCroniter
from hypothesis import given, settings
from hypothesis import strategies as st

from clockless.schedule.expressions import RateAnchorUnknown, ScheduleExpressionError, ScheduleSpec, not_a_tick


def utc(*parts: int) -> datetime:
    year, month, day, *rest = parts
    hour, minute, second, micro = (*rest, 0, 0, 0, 0)[:4]
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


def ticks(spec: ScheduleSpec, start: datetime, end: datetime) -> list[str]:
    return [f"{tick:%Y-%m-%dT%H:%M}" for tick in spec.ticks_between(start, end)]


# ---------------------------------------------------------------- cron(), in UTC


def test_last_day_of_month_in_a_leap_year_and_the_next() -> None:
    spec = ScheduleSpec.of("cron(0 12 L * ? *)")

    assert ticks(spec, utc(2028, 1, 1), utc(2028, 4, 1)) == [
        "2028-01-31T12:00",
        "2028-02-29T12:00",
        "2028-03-31T12:00",
    ]
    assert ticks(spec, utc(2027, 1, 1), utc(2027, 3, 1)) == ["2027-01-31T12:00", "2027-02-28T12:00"]


def test_a_leap_day_schedule_fires_every_fourth_year() -> None:
    spec = ScheduleSpec.of("cron(0 0 29 2 ? *)")

    assert spec.next_ticks(utc(2026, 6, 1), 2) == [utc(2028, 2, 29), utc(2032, 2, 29)]
    assert spec.previous_tick(utc(2031, 1, 1)) == utc(2028, 2, 29)


def test_nearest_weekday_nth_weekday_and_last_weekday() -> None:
    # 15 Jan 2028 is a Saturday: 15W is Friday the 14th. 6 is Friday in Scheduler's cron.
    assert ticks(ScheduleSpec.of("cron(0 12 15W * ? *)"), utc(2028, 1, 1), utc(2028, 3, 1)) == [
        "2028-01-14T12:00",
        "2028-02-15T12:00",
    ]
    assert ticks(ScheduleSpec.of("cron(0 12 ? * 6#3 *)"), utc(2028, 1, 1), utc(2028, 3, 1)) == [
        "2028-01-21T12:00",
        "2028-02-18T12:00",
    ]
    assert ticks(ScheduleSpec.of("cron(0 12 ? * 6L *)"), utc(2028, 1, 1), utc(2028, 3, 1)) == [
        "2028-01-28T12:00",
        "2028-02-25T12:00",
    ]


def test_the_year_field_ends_a_schedule() -> None:
    spec = ScheduleSpec.of("cron(0 0 1 1 ? 2027-2028)")

    assert spec.next_ticks(utc(2026, 6, 1), 5) == [utc(2027, 1, 1), utc(2028, 1, 1)]


@pytest.mark.parametrize(
    "fields",
    ["0 14 * * ? *", "0 * * * ? *", "*/15 9-17 ? * MON-FRI *", "0 0 L * ? *", "30 6 ? * 2#1 *", "0 0 1W * ? *"],
)
def test_utc_cron_matches_aws_croniter(fields: str) -> None:
    start, end = utc(2027, 12, 20), utc(2028, 3, 10)
    reference = [t for t in AwsCroniter(fields).get_all_schedule_bw_dates(start, end) if start <= t < end]

    assert ScheduleSpec.of(f"cron({fields})").ticks_between(start, end) == reference


@pytest.mark.parametrize("fields", ["0 14 * * ? *", "*/20 * ? * MON-FRI *", "0 9 L * ? *", "15 3 ? * 1#2 *"])
def test_a_zone_without_dst_is_aws_croniter_shifted_by_its_offset(fields: str) -> None:
    # Tokyo is UTC+9 all year: its wall clock is aws-croniter's "UTC" moved nine hours.
    start, end = utc(2027, 12, 20), utc(2028, 3, 10)
    offset = timedelta(hours=9)
    wall = AwsCroniter(fields).get_all_schedule_bw_dates(start + offset - timedelta(days=1), end + offset)
    reference = [moment - offset for moment in wall if start <= moment - offset < end]

    assert ScheduleSpec.of(f"cron({fields})", timezone="Asia/Tokyo").ticks_between(start, end) == reference


# ---------------------------------------------------------------- cron(), in a zone with DST


def test_a_local_cron_in_the_hour_clocks_skip_does_not_fire_that_day() -> None:
    # New York, 14 March 2027: 02:00 EST becomes 03:00 EDT.
    spec = ScheduleSpec.of("cron(30 2 * * ? *)", timezone="America/New_York")

    assert ticks(spec, utc(2027, 3, 13), utc(2027, 3, 16)) == ["2027-03-13T07:30", "2027-03-15T06:30"]


def test_a_local_cron_in_the_hour_clocks_repeat_fires_once() -> None:
    # New York, 7 November 2027: 02:00 EDT becomes 01:00 EST; 01:30 happens twice, fires at the first.
    spec = ScheduleSpec.of("cron(30 1 * * ? *)", timezone="America/New_York")

    assert ticks(spec, utc(2027, 11, 6), utc(2027, 11, 9)) == [
        "2027-11-06T05:30",
        "2027-11-07T05:30",
        "2027-11-08T06:30",
    ]
    assert spec.longest_gap() == timedelta(hours=25)
    assert spec.nominal_period() == timedelta(hours=23)


def test_a_local_quarter_hourly_cron_over_the_repeated_hour() -> None:
    spec = ScheduleSpec.of("cron(0/15 1 * * ? *)", timezone="America/New_York")

    # Each local time of 01:xx once, in its first (EDT) occurrence.
    assert ticks(spec, utc(2027, 11, 7), utc(2027, 11, 8)) == [
        "2027-11-07T05:00",
        "2027-11-07T05:15",
        "2027-11-07T05:30",
        "2027-11-07T05:45",
    ]


# ---------------------------------------------------------------- rate()


def test_rate_runs_from_its_start_date_not_from_the_window() -> None:
    spec = ScheduleSpec.of("rate(7 hours)", start_date="2027-01-01T00:05:00Z", end_date="2027-01-02T12:00:00Z")

    assert ticks(spec, utc(2027, 1, 1, 7, 17, 23, 456789), utc(2027, 1, 5)) == [
        "2027-01-01T14:05",
        "2027-01-01T21:05",
        "2027-01-02T04:05",
        "2027-01-02T11:05",
    ]
    assert spec.next_ticks(utc(2026, 12, 1), 2) == [utc(2027, 1, 1, 0, 5), utc(2027, 1, 1, 7, 5)]
    assert spec.previous_tick(utc(2027, 3, 1)) == utc(2027, 1, 2, 11, 5)
    assert spec.previous_tick(utc(2027, 1, 1)) is None


def test_rate_days_are_24_hours_across_a_dst_change() -> None:
    spec = ScheduleSpec.of("rate(1 day)", timezone="America/New_York", start_date="2027-03-13T12:00:00Z")

    assert ticks(spec, utc(2027, 3, 13), utc(2027, 3, 16)) == [
        "2027-03-13T12:00",
        "2027-03-14T12:00",
        "2027-03-15T12:00",
    ]


def test_rate_over_a_month_end_and_a_leap_day() -> None:
    spec = ScheduleSpec.of("rate(2 days)", start_date="2028-02-26T06:00:00Z")

    assert ticks(spec, utc(2028, 2, 25), utc(2028, 3, 5)) == [
        "2028-02-26T06:00",
        "2028-02-28T06:00",
        "2028-03-01T06:00",
        "2028-03-03T06:00",
    ]


def test_rate_without_a_start_date_is_refused_unless_its_creation_is_known() -> None:
    with pytest.raises(RateAnchorUnknown, match="declare StartDate"):
        ScheduleSpec.of("rate(1 hour)").ticks_between(utc(2027, 1, 1), utc(2027, 1, 2))

    deployed = ScheduleSpec.of("rate(1 hour)", created=utc(2027, 1, 1, 9, 41, 17))

    assert ticks(deployed, utc(2027, 1, 1), utc(2027, 1, 1, 12)) == [
        "2027-01-01T09:41",
        "2027-01-01T10:41",
        "2027-01-01T11:41",
    ]


# ---------------------------------------------------------------- at()


def test_at_is_local_wall_clock_time_in_its_zone_on_both_sides_of_dst() -> None:
    winter = ScheduleSpec.of("at(2027-01-15T09:00:00)", timezone="Europe/Berlin")
    summer = ScheduleSpec.of("at(2027-07-15T09:00:00)", timezone="Europe/Berlin")

    assert winter.next_ticks(utc(2027, 1, 1), 3) == [utc(2027, 1, 15, 8)]
    assert summer.next_ticks(utc(2027, 1, 1), 3) == [utc(2027, 7, 15, 7)]
    assert summer.previous_tick(utc(2030, 1, 1)) == utc(2027, 7, 15, 7)


def test_at_in_the_repeated_hour_fires_at_the_first_and_in_the_skipped_hour_is_refused() -> None:
    repeated = ScheduleSpec.of("at(2027-10-31T02:30:00)", timezone="Europe/Berlin")

    assert repeated.next_ticks(utc(2027, 10, 1), 1) == [utc(2027, 10, 31, 0, 30)]  # 02:30 CEST
    with pytest.raises(ScheduleExpressionError, match="does not exist in Europe/Berlin"):
        ScheduleSpec.of("at(2027-03-28T02:30:00)", timezone="Europe/Berlin")


def test_at_ignores_start_and_end_dates() -> None:
    spec = ScheduleSpec.of(
        "at(2027-05-01T00:00:00)", start_date="2027-06-01T00:00:00Z", end_date="2027-07-01T00:00:00Z"
    )

    assert spec.ticks_between(utc(2027, 1, 1), utc(2028, 1, 1)) == [utc(2027, 5, 1)]


# ---------------------------------------------------------------- StartDate and EndDate on cron()


def test_cron_ticks_fall_in_start_inclusive_end_exclusive() -> None:
    spec = ScheduleSpec.of("cron(0 14 * * ? *)", start_date="2027-01-02T14:00:00Z", end_date="2027-01-04T14:00:00Z")

    assert ticks(spec, utc(2027, 1, 1), utc(2027, 1, 10)) == ["2027-01-02T14:00", "2027-01-03T14:00"]
    assert spec.next_ticks(utc(2027, 1, 3, 15), 3) == []


# ---------------------------------------------------------------- refused with a clear error


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expression": "every day"}, "none of cron"),
        ({"expression": "cron(0 14 * * *)"}, "six fields.*cron\\(0 14 \\* \\* \\? \\*\\)"),
        ({"expression": "rate(0 hours)"}, "positive integer"),
        ({"expression": "rate(5 weeks)"}, "expected rate\\(N minute"),
        ({"expression": "cron(0 14 1 * MON *)"}, "must be \\? and the other not.*cron\\(0 14 1 \\* \\? \\*\\)"),
        ({"expression": "at(2027-02-30T00:00:00)"}, "day is out of range"),
        ({"expression": "cron(0 14 * * ? *)", "timezone": "Mars/Olympus"}, "not an IANA time zone"),
        ({"expression": "at(2027-01-01T00:00:30)"}, "whole minutes"),
        ({"expression": "rate(1 hour)", "start_date": "2027-01-01T00:00:30Z"}, "whole minutes"),
        ({"expression": "rate(1 hour)", "start_date": "tomorrow"}, "not an ISO-8601"),
        (
            {"expression": "rate(1 hour)", "start_date": "2027-01-02T00:00:00Z", "end_date": "2027-01-01T00:00:00Z"},
            "not after StartDate",
        ),
    ],
)
def test_bad_schedules_are_refused_naming_what_is_wrong(kwargs: dict[str, str], message: str) -> None:
    options: dict[str, Any] = dict(kwargs)
    expression = options.pop("expression")
    with pytest.raises(ScheduleExpressionError, match=message):
        ScheduleSpec.of(expression, **options)


def test_the_gaps_of_a_schedule_whose_years_start_later() -> None:
    spec = ScheduleSpec.of("cron(0 0 1 * ? 2030)")

    assert spec.nominal_period() == timedelta(days=28)
    assert spec.longest_gap() == timedelta(days=31)


@settings(max_examples=40, deadline=None)
@given(
    minute=st.sampled_from(["0", "30", "0/20", "15,45"]),
    hour=st.sampled_from(["*", "0-3", "1", "2", "23"]),
    zone=st.sampled_from(["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago"]),
    day=st.dates(min_value=date(2027, 1, 1), max_value=date(2028, 12, 1)),
)
def test_each_existing_local_match_fires_once_and_nothing_else_fires(
    minute: str, hour: str, zone: str, day: date
) -> None:
    """Against aws-croniter on wall-clock time: the engine fires exactly the local times that exist,
    each once, at the first UTC instant that shows it."""
    fields = f"{minute} {hour} * * ? *"
    start = datetime.combine(day, time(), UTC)
    end = start + timedelta(days=3)
    tz = ZoneInfo(zone)

    ticks = ScheduleSpec.of(f"cron({fields})", timezone=zone).ticks_between(start, end)

    walls = {
        t.replace(tzinfo=None)
        for t in AwsCroniter(fields).get_all_schedule_bw_dates(start - timedelta(days=1), end + timedelta(days=1))
    }
    expected = set()
    for wall in walls:
        first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
        if first.astimezone(tz).replace(tzinfo=None) == wall and start <= first < end:
            expected.add(first)
    assert ticks == sorted(expected)
    assert len(set(ticks)) == len(ticks)


@pytest.mark.parametrize(
    "expression",
    ["cron(0 0 31 2 ? *)", "cron(0 0 30 2 ? *)", "cron(0 0 31 4,6,9,11 ? *)", "cron(0 0 29 2 ? 2027)"],
)
def test_a_cron_that_never_fires_is_refused(expression: str) -> None:
    with pytest.raises(ScheduleExpressionError, match=r"never fires: no date of its years .* has the day it names"):
        ScheduleSpec(expression).next_ticks(utc(2026, 1, 1), 1)


def test_lw_is_refused_with_what_the_reference_does_define() -> None:
    with pytest.raises(ScheduleExpressionError) as refused:
        ScheduleSpec("cron(0 12 LW * ? *)").next_ticks(utc(2026, 1, 1), 1)

    assert "28W" not in str(refused.value)
    assert "use L (the last day, weekends too), or ? here and 6L in day-of-week (the last Friday)" in str(refused.value)
    # and what it suggests is accepted and means what it says: the last Friday of February 2027 is the 26th
    assert ScheduleSpec("cron(0 12 ? * 6L *)").next_ticks(utc(2027, 2, 1), 1) == [utc(2027, 2, 26, 12)]


# ---------------------------------------------------------------- is this instant a tick (run-now, the HTTP trigger)


def test_a_tick_is_one_of_the_schedules_instants_and_its_neighbours_are_named() -> None:
    # Given an hourly cron in a zone with DST and a rate() anchored on a StartDate
    hourly = ScheduleSpec.of("cron(0 * * * ? *)", timezone="America/New_York")
    every_90 = ScheduleSpec.of("rate(90 minutes)", start_date="2027-01-01T00:00:00Z")

    # Then its ticks are ticks, any other instant (a minute, or seconds, off) is not
    assert hourly.is_tick(utc(2027, 3, 14, 7))
    assert not hourly.is_tick(utc(2027, 3, 14, 7, 30))
    assert not hourly.is_tick(utc(2027, 3, 14, 7, 0, 30))
    assert every_90.is_tick(utc(2027, 1, 1, 1, 30))
    assert not every_90.is_tick(utc(2027, 1, 1, 1))
    # And the scheduled times around an instant are the last at or before it and the first after it
    assert hourly.ticks_around(utc(2027, 3, 14, 7, 30)) == (utc(2027, 3, 14, 7), utc(2027, 3, 14, 8))
    assert hourly.ticks_around(utc(2027, 3, 14, 7)) == (utc(2027, 3, 14, 7), utc(2027, 3, 14, 8))
    assert every_90.ticks_around(utc(2026, 12, 31, 23)) == (None, utc(2027, 1, 1))


def test_an_instant_that_is_not_a_tick_is_described_with_the_ticks_around_it() -> None:

    spec = ScheduleSpec.of("cron(0 12 ? * 6L 2027)")  # the last Friday of each month of 2027

    assert not_a_tick(spec, "report", utc(2027, 2, 1, 12)) == (
        "2027-02-01T12:00:00Z is not a tick of report's schedule cron(0 12 ? * 6L 2027) "
        "(scheduled times: before it 2027-01-29T12:00:00Z, after it 2027-02-26T12:00:00Z)"
    )
    assert not_a_tick(spec, "report", utc(2028, 1, 1)).endswith("before it 2027-12-31T12:00:00Z, after it none)")
