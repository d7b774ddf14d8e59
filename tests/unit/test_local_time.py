"""A local time in several zones (Mappings.Jobs.<Id>.LocalTime) as one job's ticks: the UTC hours
it falls on in each zone, the one cron that holds them, the ticks the tick engine keeps of that
cron, the kit dropping the cron's other instants, and the schedules check holding the declaration.

Expected instants are written out by hand from the zones' rules (US DST 2027 starts Sunday 14 March
at 02:00 local and ends Sunday 7 November at 02:00 local; the UK's on Sunday 28 March and Sunday
31 October 2027 at 01:00 UTC; Lagos keeps UTC+01:00 all year), never computed with the code under
test.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import pytest

from clockless.config import ConfigurationError
from clockless.job import OUTCOME_NOT_A_TICK, ScheduledJob
from clockless.run import JobRun
from clockless.schedule.expressions import ScheduleExpressionError, ScheduleSpec, not_a_tick
from clockless.schedule.local_clock import LocalClock, LocalClockError
from clockless.tick import Tick, Trigger
from clockless_tools.template.model import ScheduleDefinitionError, Template
from clockless_tools.timezones.check import check_template, one_year_from, suggested_local_time
from clockless_tools.timezones.rule import LOCAL_TIME_SCHEDULE, LocalTimeRule
from clockless_tools.timezones.zone_schedules import local_time_cron, zone_schedules

NY, CHICAGO, LONDON, LAGOS = "America/New_York", "America/Chicago", "Europe/London", "Africa/Lagos"
YEAR_2027 = one_year_from(date(2027, 1, 1))
NOTICES = LocalClock(time(7, 30), (NY, CHICAGO))
NOTICES_CRON = "cron(30 11,12,13 * * ? *)"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_07_30_in_new_york_and_chicago_falls_on_two_utc_hours_in_each_zone_and_three_in_all() -> None:
    # Given 07:30 in New York (UTC-05:00, UTC-04:00 in summer) and Chicago (UTC-06:00, UTC-05:00)
    # When each zone's hours are found over 2027, and the one cron at all of them
    schedules = zone_schedules(NOTICES, *YEAR_2027)

    # Then each zone has its winter hour and its summer one, and the cron lists only hours that fire
    assert [(s.zone, s.offsets) for s in schedules] == [
        (NY, (("UTC-05:00", 12, 30), ("UTC-04:00", 11, 30))),
        (CHICAGO, (("UTC-06:00", 13, 30), ("UTC-05:00", 12, 30))),
    ]
    assert local_time_cron(NOTICES, *YEAR_2027) == NOTICES_CRON


# Hand-computed: the ticks of 07:30 in New York and Chicago around both US changes, and the zone each serves.
AROUND_THE_CHANGES = [
    ("2027-03-13T00:00", "2027-03-15T00:00", [
        ("2027-03-13T12:30", (NY,)), ("2027-03-13T13:30", (CHICAGO,)),
        # Sunday: both zones moved at 02:00 local (07:00Z and 08:00Z), before their 07:30.
        ("2027-03-14T11:30", (NY,)), ("2027-03-14T12:30", (CHICAGO,)),
    ]),
    ("2027-11-06T00:00", "2027-11-08T00:00", [
        ("2027-11-06T11:30", (NY,)), ("2027-11-06T12:30", (CHICAGO,)),
        ("2027-11-07T12:30", (NY,)), ("2027-11-07T13:30", (CHICAGO,)),
    ]),
]  # fmt: skip


@pytest.mark.parametrize(("start", "end", "expected"), AROUND_THE_CHANGES)
def test_the_ticks_are_07_30_in_one_zone_each_across_both_changes(
    start: str, end: str, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    spec = ScheduleSpec.of(NOTICES_CRON, local_clock=NOTICES)

    ticks = spec.ticks_between(utc(start), utc(end))

    assert [(tick, NOTICES.zones_at(tick)) for tick in ticks] == [(utc(at), zones) for at, zones in expected]


def test_the_crons_instant_at_07_30_nowhere_is_no_tick_before_after_or_as_itself() -> None:
    spec = ScheduleSpec.of(NOTICES_CRON, local_clock=NOTICES)
    summer_off = utc("2027-07-01T13:30")  # 09:30 in New York, 08:30 in Chicago

    assert not spec.is_tick(summer_off)
    assert spec.previous_tick(summer_off) == utc("2027-07-01T12:30")
    assert spec.next_ticks(utc("2027-07-01T12:30"), 1) == [utc("2027-07-02T11:30")]
    assert len(spec.ticks_between(*YEAR_2027)) == 2 * 365
    # The gaps the dead-man alarm and the derived numbers read: an hour, then 23 (24 across a change).
    assert (spec.nominal_period().total_seconds(), spec.longest_gap().total_seconds()) == (3600, 86400)
    assert "is not a tick of notices's schedule cron(30 11,12,13 * * ? *) at 07:30 local in" in not_a_tick(
        spec, "notices", summer_off
    )


def test_two_zones_whose_clocks_show_the_time_at_one_instant_share_one_tick() -> None:
    # Given 09:00 in London (UTC+00:00, UTC+01:00 in summer) and Lagos (UTC+01:00 all year)
    clock = LocalClock(time(9, 0), (LONDON, LAGOS))
    cron = local_time_cron(clock, *YEAR_2027)
    spec = ScheduleSpec.of(cron, local_clock=clock)

    # Then in summer one instant is 09:00 in both: one tick (job + scheduled time), serving both zones
    assert cron == "cron(0 8,9 * * ? *)"
    assert spec.ticks_between(utc("2027-07-01T00:00"), utc("2027-07-02T00:00")) == [utc("2027-07-01T08:00")]
    assert clock.zones_at(utc("2027-07-01T08:00")) == (LONDON, LAGOS)
    assert spec.ticks_between(utc("2027-01-04T00:00"), utc("2027-01-05T00:00")) == [
        utc("2027-01-04T08:00"),
        utc("2027-01-04T09:00"),
    ]


def test_a_local_time_its_zones_put_on_different_minutes_of_the_hour_is_refused() -> None:
    with pytest.raises(LocalClockError, match="falls on 2 different minute"):
        local_time_cron(LocalClock(time(7, 30), (NY, "Asia/Kolkata")), *YEAR_2027)


@pytest.mark.parametrize(
    ("text", "zones", "message"),
    [
        ("7:30", [NY], "is not a 24-hour HH:MM time"),
        ("07:30", [], "names no zone"),
        ("07:30", ["Europe/Atlantis"], "'Europe/Atlantis' is not an IANA time zone"),
        ("07:30", [NY, NY], "lists a zone more than once"),
    ],
)
def test_a_bad_local_time_or_zone_is_one_line_naming_it(text: str, zones: list[str], message: str) -> None:
    with pytest.raises(LocalClockError, match=message):
        LocalClock.parse(text, zones)


def test_a_local_time_is_kept_by_a_cron_only() -> None:
    with pytest.raises(ScheduleExpressionError, match="write the schedule as that cron"):
        ScheduleSpec.of("rate(1 hour)", start_date="2027-01-01T00:00:00Z", local_clock=NOTICES)


def test_a_cron_whose_hours_never_show_the_local_time_has_no_tick() -> None:
    spec = ScheduleSpec.of("cron(30 11 * * ? *)", local_clock=LocalClock(time(7, 30), ("Asia/Tokyo",)))

    assert spec.previous_tick(utc("2027-07-01T00:00")) is None
    assert spec.next_ticks(utc("2027-07-01T00:00"), 1) == []


# ---------------------------------------------------------------- the kit


def notices_job(monkeypatch: pytest.MonkeyPatch) -> tuple[ScheduledJob, Any]:
    monkeypatch.setenv("LOCAL_TIME", "07:30")
    monkeypatch.setenv("OPERATING_TIME_ZONES", f"{NY},{CHICAGO}")
    job = ScheduledJob("notices")
    ran: list[Tick] = []

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        ran.append(run.tick)
        return {}

    return job, handler


def notices_tick(at: str, trigger: Trigger = Trigger.SCHEDULE) -> Tick:
    return Tick("notices", utc(at), schedule_arn=None, attempt=1, execution_id=None, trigger=trigger)


def test_the_kit_runs_a_tick_for_the_zones_whose_clocks_show_it(monkeypatch: pytest.MonkeyPatch) -> None:
    job, _ = notices_job(monkeypatch)

    def tick(at: str, trigger: Trigger = Trigger.SCHEDULE) -> Tick:
        return notices_tick(at, trigger)

    assert job.not_a_tick(tick("2026-07-01T11:30")) is None
    assert NOTICES.zones_at(utc("2026-07-01T11:30")) == (NY,)
    assert NOTICES.zones_at(utc("2026-12-01T13:30")) == (CHICAGO,)
    assert job.not_a_tick(tick("2026-07-01T13:30")) == {
        "job": "notices",
        "scheduled_time": "2026-07-01T13:30:00Z",
        "outcome": OUTCOME_NOT_A_TICK,
        "reason": f"2026-07-01T13:30:00Z is not 07:30 local in {NY}, {CHICAGO}",
    }
    # An off-schedule run is asked for at an instant that is no tick, and runs.
    assert job.not_a_tick(tick("2026-07-01T13:30", Trigger.OFF_SCHEDULE)) is None


def test_a_bad_local_time_in_the_environment_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    job, _ = notices_job(monkeypatch)
    monkeypatch.setenv("LOCAL_TIME", "7.30")

    with pytest.raises(ConfigurationError, match=r"environment variable LOCAL_TIME: '7\.30' is not a 24-hour"):
        job.not_a_tick(notices_tick("2026-07-01T11:30"))


# ---------------------------------------------------------------- the declaration, checked


def notices_template(*, schedule: str = NOTICES_CRON, local_time: Any = "07:30", env: str = "07:30") -> Template:
    document = {
        "Resources": {
            "NoticesFunction": {
                "Type": "AWS::Serverless::Function",
                "Metadata": {
                    "clockless": {
                        "operating_time_zones": [NY, CHICAGO],
                        "local_time_rule": "not_before=07:30,not_after=07:30",
                        "local_time": local_time,
                    }
                },
                "Properties": {
                    "Environment": {"Variables": {"OPERATING_TIME_ZONES": f"{NY},{CHICAGO}", "LOCAL_TIME": env}},
                    "Events": {
                        "Schedule": {
                            "Type": "ScheduleV2",
                            "Properties": {
                                "ScheduleExpression": schedule,
                                "ScheduleExpressionTimezone": "UTC",
                                "Input": json.dumps({"job": "notices"}),
                            },
                        }
                    },
                },
            }
        }
    }
    return Template(path=Path("template.yaml"), document=document)


def problems(template: Template) -> list[tuple[str, str]]:
    (check,) = check_template(template, start=date(2027, 1, 1)).schedules
    return [(v.rule, v.detail) for v in check.violations]


def test_the_declared_local_time_and_its_cron_pass_and_each_tick_keeps_the_rule_where_it_serves() -> None:
    # The rule (07:30 exactly) holds in the zone each tick serves; in the other zone it is 06:30 or 08:30.
    (check,) = check_template(notices_template(), start=date(2027, 1, 1)).schedules

    assert check.ok, check.violations
    assert check.ticks_checked == 730
    assert check.local_time == "07:30"
    assert [s.zone for s in check.zone_schedules] == [NY, CHICAGO]


@pytest.mark.parametrize(
    ("planted", "expected"),
    [
        # An hour left out: summer's New York tick would never be delivered.
        ({"schedule": "cron(30 12,13 * * ? *)"},
         "ScheduleExpression cron(30 12,13 * * ? *) is not the cron of 07:30 local in America/New_York, "
         "America/Chicago over the year: cron(30 11,12,13 * * ? *)"),
        # An hour too many: an instant 07:30 nowhere, all year.
        ({"schedule": "cron(30 10,11,12,13 * * ? *)"},
         "ScheduleExpression cron(30 10,11,12,13 * * ? *) is not the cron of 07:30 local"),
        # The kit reads another time than the Metadata declares.
        ({"env": "08:00"}, "Metadata.clockless.local_time declares 07:30 but the function's LOCAL_TIME is 08:00"),
    ],
)  # fmt: skip
def test_a_schedule_or_environment_that_drifts_from_the_declaration_fails_naming_what_to_write(
    planted: dict[str, str], expected: str
) -> None:
    found = problems(notices_template(**planted))

    assert [rule for rule, _ in found] == [LOCAL_TIME_SCHEDULE]
    assert found[0][1].startswith(expected)


def test_an_unquoted_local_time_that_yaml_read_as_a_number_is_refused() -> None:
    with pytest.raises(ScheduleDefinitionError, match=r'450 is a number; quote the time, e\.g\. "07:30"'):
        notices_template(local_time=450).jobs["notices"].spec()


def test_the_advice_for_a_rule_no_hour_keeps_offers_its_first_local_time_as_one_declaration() -> None:
    # Given 07:30 to 08:30 local in New York and Chicago, which no one UTC hour keeps in both
    rule = LocalTimeRule(not_before=time(7, 30), not_after=time(8, 30))

    # Then the advice names 07:30 as the job's LocalTime, with the cron of every hour it falls on
    assert suggested_local_time(rule, (NY, CHICAGO), *YEAR_2027) == ("07:30", NOTICES_CRON)
    assert suggested_local_time(LocalTimeRule(not_after=time(8, 30)), (NY, CHICAGO), *YEAR_2027) is None
