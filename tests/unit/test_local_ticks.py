"""The dead-man of each zone of a job with a local time (clockless.local_ticks): which zone's local
tick due by now has not succeeded, across the days of 23 and 25 hours of a change of offset, for a
zone never succeeded yet, and for a job whose read of its successes was cut at its limit.

Instants are written out by hand from the zones' rules (US DST 2027 starts Sunday 14 March at 02:00
local and ends Sunday 7 November at 02:00 local): 07:30 in New York is 12:30 UTC in winter, 11:30 in
summer; in Chicago 13:30 and 12:30."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest

from clockless.config import ConfigurationError, local_tick_grace
from clockless.local_ticks import MAX_GRACE, MissedLocalTick, missed_local_ticks
from clockless.schedule.local_clock import LocalClock

NY, CHICAGO = "America/New_York", "America/Chicago"
NOTICES = LocalClock(time(7, 30), (NY, CHICAGO))
GRACE = timedelta(minutes=50)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def missed(now: str, *succeeded: str, all_read: bool = True, grace: timedelta = GRACE) -> list[MissedLocalTick]:
    return list(missed_local_ticks(NOTICES, utc(now), grace, [utc(s) for s in succeeded], all_read=all_read))


def test_both_zones_succeeded_yesterday_and_today_nothing_is_missed() -> None:
    # Given a winter day whose two local ticks both succeeded (New York 12:30Z, Chicago 13:30Z)
    # When the next day's first delivery (11:30Z, a not_a_tick in winter) looks
    # Then no zone is reported
    assert missed("2027-01-12T11:30", "2027-01-11T12:30", "2027-01-11T13:30") == []


def test_a_zone_whose_tick_failed_is_named_with_the_last_one_it_had() -> None:
    # Given Chicago's 13:30Z tick of 11 January that never succeeded, New York's every day
    succeeded = ("2027-01-10T12:30", "2027-01-10T13:30", "2027-01-11T12:30", "2027-01-12T12:30")

    # When the 12 January 13:30Z delivery looks (Chicago's own tick of that day has not run yet)
    found = missed("2027-01-12T13:30", *succeeded)

    # Then Chicago is named: its tick due by then is 11 January's, and its last success the day before
    assert found == [MissedLocalTick(CHICAGO, utc("2027-01-11T13:30"), utc("2027-01-10T13:30"))]


def test_a_tick_still_in_its_grace_is_not_missed() -> None:
    # Given New York's 12:30Z tick of today, not yet succeeded, 49 minutes later (its grace is 50)
    # Then its due tick is yesterday's, which succeeded; at 51 minutes it is today's, and missed
    assert missed("2027-01-12T13:19", "2027-01-11T12:30", "2027-01-11T13:30") == []
    assert missed("2027-01-12T13:21", "2027-01-11T12:30", "2027-01-11T13:30") == [
        MissedLocalTick(NY, utc("2027-01-12T12:30"), utc("2027-01-11T12:30"))
    ]


def test_the_23_hour_day_moves_the_due_tick_with_the_clock() -> None:
    # Given New York's 07:30 on Saturday 13 March (12:30Z) and Sunday 14 March 2027 (11:30Z, 23 h later)
    # When it is 12:21Z on Sunday: the Sunday tick's grace is over
    # Then Sunday's tick is the one due: a success from Saturday, 23 h 51 min ago, is not enough
    assert missed("2027-03-14T12:21", "2027-03-13T12:30", "2027-03-13T13:30") == [
        MissedLocalTick(NY, utc("2027-03-14T11:30"), utc("2027-03-13T12:30"))
    ]
    # And with Sunday's tick succeeded nothing is missed
    assert missed("2027-03-14T12:21", "2027-03-13T12:30", "2027-03-13T13:30", "2027-03-14T11:30") == []


def test_the_25_hour_day_waits_for_the_later_tick() -> None:
    # Given New York's 07:30 on Saturday 6 November (11:30Z) and Sunday 7 November 2027 (12:30Z, 25 h later)
    # When it is 13:00Z on Sunday, 25 h 30 min after Saturday's success: Sunday's tick is in its grace
    # Then nothing is missed (an allowance of a day would have fired an hour ago)
    assert missed("2027-11-07T13:00", "2027-11-06T11:30", "2027-11-06T12:30") == []
    # And once its grace is over (13:21Z) Sunday's tick is due
    assert [m.due for m in missed("2027-11-07T13:21", "2027-11-06T11:30", "2027-11-06T12:30")] == [
        utc("2027-11-07T12:30")
    ]


def test_a_job_that_never_succeeded_names_no_zone() -> None:
    # Given a job with no success at all (just deployed, or never working: its own dead-man alarm's)
    # Then no zone is named
    assert missed("2027-01-12T13:30") == []


def test_a_zone_never_succeeded_yet_is_named_once_its_tick_came_after_the_jobs_first_success() -> None:
    # Given a job deployed on 11 January at 13:00Z: Chicago's 13:30Z tick succeeded, New York's 12:30Z
    # was before the deploy
    # When the 12 January 11:30Z delivery looks: New York's tick due is the one before the deploy
    # Then New York is not named (its tick may have come before the job existed)
    assert missed("2027-01-12T11:30", "2027-01-11T13:30") == []

    # When New York's 12 January tick has failed too (13:30Z, its grace over)
    # Then it is named, with no success of its own read
    assert missed("2027-01-12T13:30", "2027-01-11T13:30") == [MissedLocalTick(NY, utc("2027-01-12T12:30"), None)]


def test_a_read_cut_at_its_limit_counts_the_successes_before_it() -> None:
    # Given New York's 13 January success alone read, after Chicago's 12 January tick due by 13:25Z
    # When the read was cut at its limit, Chicago is named: the job had older successes than those read
    assert missed("2027-01-13T13:25", "2027-01-13T12:30", all_read=False) == [
        MissedLocalTick(CHICAGO, utc("2027-01-12T13:30"), None)
    ]
    # And read whole, the same success is the job's first: Chicago's tick may predate the job
    assert missed("2027-01-13T13:25", "2027-01-13T12:30", all_read=True) == []


def test_a_local_time_a_zone_skips_has_the_day_before_as_its_due_tick() -> None:
    # Given 02:30 in New York, which Sunday 14 March 2027 skips (02:00 -> 03:00 local)
    nightly = LocalClock(time(2, 30), (NY,))

    # Then on that Sunday the tick due is Saturday's (07:30Z); a success then is enough
    assert nightly.latest_in(NY, utc("2027-03-14T12:00")) == utc("2027-03-13T07:30")
    assert missed_local_ticks(nightly, utc("2027-03-14T12:00"), GRACE, [utc("2027-03-13T07:30")], all_read=True) == ()


def test_a_local_time_a_zone_shows_twice_is_due_at_its_second_instant() -> None:
    # Given 01:30 in New York, shown twice on Sunday 7 November 2027 (05:30Z and, an hour later, 06:30Z)
    early = LocalClock(time(1, 30), (NY,))

    # Then between the two the first is due, after the second the second
    assert early.latest_in(NY, utc("2027-11-07T06:00")) == utc("2027-11-07T05:30")
    assert early.latest_in(NY, utc("2027-11-07T07:00")) == utc("2027-11-07T06:30")
    assert early.latest_in(CHICAGO, utc("2027-11-07T07:00")) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "LOCAL_TICK_GRACE_MINUTES must be >= 1, got 0"),
        ("1381", "LOCAL_TICK_GRACE_MINUTES must be at most 1380, got 1381"),
        ("ten", "LOCAL_TICK_GRACE_MINUTES must be an integer, got 'ten'"),
        ("", "LOCAL_TICK_GRACE_MINUTES is not set"),
    ],
)
def test_a_bad_grace_in_the_environment_is_one_line_naming_the_variable(value: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        local_tick_grace({"LOCAL_TICK_GRACE_MINUTES": value}, longest=MAX_GRACE)
    assert local_tick_grace({"LOCAL_TICK_GRACE_MINUTES": "50"}, longest=MAX_GRACE) == GRACE
