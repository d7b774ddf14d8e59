"""The local-time rule against hand-computed wall clocks on both US DST days of 2027.

Expected local times below are written out by hand from the zones' rules (US DST 2027 starts
Sunday 14 March at 02:00 local and ends Sunday 7 November at 02:00 local; Phoenix and Honolulu keep
standard time all year), never computed with the code under test.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import pytest

from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template
from clockless_tools.timezones.check import LocalTimeViolation, ScheduleCheck, one_year_from
from clockless_tools.timezones.declaration import TimeDeclaration, read_declaration, with_parameter_overrides
from clockless_tools.timezones.event import utc_offset
from clockless_tools.timezones.rule import (
    NOT_AFTER,
    NOT_BEFORE,
    SAME_LOCAL_DATE,
    DeclarationError,
    LocalTimeRule,
    breaches,
    local_times,
)
from clockless_tools.timezones.suggest import (
    describe_hours,
    firing_stretches,
    fixed_minute,
    hour_runs,
    offset_changes,
    per_zone_hours,
    seasons,
    suggest_utc_hours,
)
from window_generation.logic import business_date_of

NY, CHICAGO, DENVER, PHOENIX, LA, ANCHORAGE, HONOLULU = ZONES = (
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Phoenix",
    "America/Los_Angeles",
    "America/Anchorage",
    "Pacific/Honolulu",
)
NIGHTLY_RULE = LocalTimeRule(not_before=time(4, 0), same_local_date=True)
YEAR_2027 = one_year_from(date(2027, 1, 1))
BERLIN = "Europe/Berlin"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# Hand-computed: tick (UTC) -> zone -> (local wall time, UTC offset).
HAND_COMPUTED: dict[str, dict[str, tuple[str, str]]] = {
    # The nightly tick on spring-forward day: every DST zone already switched (NY at 07:00Z ...
    # Anchorage at 11:00Z), so it is 04:00 in Honolulu and 10:00 in New York.
    "2027-03-14T14:00": {
        NY: ("2027-03-14 10:00", "UTC-04:00"),
        CHICAGO: ("2027-03-14 09:00", "UTC-05:00"),
        DENVER: ("2027-03-14 08:00", "UTC-06:00"),
        PHOENIX: ("2027-03-14 07:00", "UTC-07:00"),
        LA: ("2027-03-14 07:00", "UTC-07:00"),
        ANCHORAGE: ("2027-03-14 06:00", "UTC-08:00"),
        HONOLULU: ("2027-03-14 04:00", "UTC-10:00"),
    },
    # The nightly tick on fall-back day: every zone is back on standard time.
    "2027-11-07T14:00": {
        NY: ("2027-11-07 09:00", "UTC-05:00"),
        CHICAGO: ("2027-11-07 08:00", "UTC-06:00"),
        DENVER: ("2027-11-07 07:00", "UTC-07:00"),
        PHOENIX: ("2027-11-07 07:00", "UTC-07:00"),
        LA: ("2027-11-07 06:00", "UTC-08:00"),
        ANCHORAGE: ("2027-11-07 05:00", "UTC-09:00"),
        HONOLULU: ("2027-11-07 04:00", "UTC-10:00"),
    },
    # Mid-transition: NY, Chicago, Denver and Los Angeles (02:00 PST = 10:00Z, exactly now) have
    # sprung forward; Anchorage (11:00Z) has not yet.
    "2027-03-14T10:00": {
        NY: ("2027-03-14 06:00", "UTC-04:00"),
        CHICAGO: ("2027-03-14 05:00", "UTC-05:00"),
        DENVER: ("2027-03-14 04:00", "UTC-06:00"),
        PHOENIX: ("2027-03-14 03:00", "UTC-07:00"),
        LA: ("2027-03-14 03:00", "UTC-07:00"),
        ANCHORAGE: ("2027-03-14 01:00", "UTC-09:00"),
        HONOLULU: ("2027-03-14 00:00", "UTC-10:00"),
    },
    # Mid-transition: NY fell back at 06:00Z, Chicago exactly now (02:00 CDT = 07:00Z); Denver,
    # Los Angeles and Anchorage are still on daylight time and the west is still on 6 November.
    "2027-11-07T07:00": {
        NY: ("2027-11-07 02:00", "UTC-05:00"),
        CHICAGO: ("2027-11-07 01:00", "UTC-06:00"),
        DENVER: ("2027-11-07 01:00", "UTC-06:00"),
        PHOENIX: ("2027-11-07 00:00", "UTC-07:00"),
        LA: ("2027-11-07 00:00", "UTC-07:00"),
        ANCHORAGE: ("2027-11-06 23:00", "UTC-08:00"),
        HONOLULU: ("2027-11-06 21:00", "UTC-10:00"),
    },
}

# Hand-computed: tick -> the (rule, zone) pairs that `not_before 04:00, same_local_date` breaks.
HAND_COMPUTED_BREACHES: dict[str, list[tuple[str, str]]] = {
    "2027-03-14T14:00": [],
    "2027-11-07T14:00": [],
    # Denver at exactly 04:00 keeps the rule (the bound is inclusive).
    "2027-03-14T10:00": [(NOT_BEFORE, PHOENIX), (NOT_BEFORE, LA), (NOT_BEFORE, ANCHORAGE), (NOT_BEFORE, HONOLULU)],
    # The same UTC hour a day earlier, before spring-forward, is 03:00 MST in Denver as well.
    "2027-03-13T10:00": [
        (NOT_BEFORE, DENVER),
        (NOT_BEFORE, PHOENIX),
        (NOT_BEFORE, LA),
        (NOT_BEFORE, ANCHORAGE),
        (NOT_BEFORE, HONOLULU),
    ],
    # 00:00-02:00 on 7 November in the five eastern zones; Anchorage (23:00) and Honolulu (21:00)
    # are past 04:00 of their own date, which is a day behind the five others.
    "2027-11-07T07:00": [
        (NOT_BEFORE, NY),
        (NOT_BEFORE, CHICAGO),
        (NOT_BEFORE, DENVER),
        (NOT_BEFORE, PHOENIX),
        (NOT_BEFORE, LA),
        (SAME_LOCAL_DATE, ANCHORAGE),
        (SAME_LOCAL_DATE, HONOLULU),
    ],
}


@pytest.mark.parametrize(
    ("tick", "zone", "expected"),
    [(tick, zone, expected) for tick, zones in HAND_COMPUTED.items() for zone, expected in zones.items()],
)
def test_tick_lands_at_the_hand_computed_wall_clock_in_each_default_zone(
    tick: str, zone: str, expected: tuple[str, str]
) -> None:
    # Given a tick on a DST day of 2027
    # When it is read in the zone
    local = local_times(utc(tick), ZONES)[zone]

    # Then it is the wall-clock time worked out by hand
    assert (f"{local:%Y-%m-%d %H:%M}", utc_offset(local)) == expected


@pytest.mark.parametrize(("tick", "expected"), list(HAND_COMPUTED_BREACHES.items()))
def test_nightly_rule_breaks_exactly_the_hand_computed_zones(tick: str, expected: list[tuple[str, str]]) -> None:
    # Given the nightly job's rule and the default operating zones
    # When a tick around a DST change is checked
    found = breaches(NIGHTLY_RULE, utc(tick), ZONES)

    # Then the breaches are the ones worked out by hand, in zone order
    assert [(b.rule, b.zone) for b in found] == expected


def test_a_zone_a_day_behind_the_others_is_reported_with_its_local_date() -> None:
    # Given 2027-11-07T07:00Z, when Anchorage and Honolulu are still on 6 November
    found = breaches(LocalTimeRule(same_local_date=True), utc("2027-11-07T07:00"), ZONES)

    # Then only those two break the date rule, each one day behind
    assert [(b.zone, f"{b.local_time:%Y-%m-%d %H:%M}", b.days_off) for b in found] == [
        (ANCHORAGE, "2027-11-06 23:00", -1),
        (HONOLULU, "2027-11-06 21:00", -1),
    ]
    assert found[0].detail == "a day behind most zones"


def test_honolulu_alone_crosses_the_date_line_at_0900_utc_on_spring_forward_day() -> None:
    # Given 09:00Z on 2027-03-14: 23:00 on the 13th in Honolulu, 00:00 AKST on the 14th in Anchorage
    found = breaches(LocalTimeRule(same_local_date=True), utc("2027-03-14T09:00"), ZONES)

    # Then Honolulu, and only Honolulu, is on another date
    assert [(b.zone, f"{b.local_time:%Y-%m-%d %H:%M}") for b in found] == [(HONOLULU, "2027-03-13 23:00")]


def test_not_after_is_inclusive_to_the_minute() -> None:
    rule = LocalTimeRule(not_after=time(9, 0))

    assert breaches(rule, utc("2027-01-04T14:00:59"), [NY]) == []
    assert [b.rule for b in breaches(rule, utc("2027-01-04T14:01:00"), [NY])] == [NOT_AFTER]


@pytest.mark.parametrize("hour", range(24))
def test_date_rule_agrees_with_the_business_date_window_generation_uses(hour: int) -> None:
    # Given a tick at this UTC hour on each DST day of 2027 and a day between them
    for day in (date(2027, 3, 14), date(2027, 7, 1), date(2027, 11, 7)):
        tick = datetime.combine(day, time(hour), UTC)
        date_breaches = breaches(LocalTimeRule(same_local_date=True), tick, ZONES)

        # When window generation derives its business date from the same tick
        local_dates = {local.date() for local in local_times(tick, ZONES).values()}
        # Then the ticks the linter passes have one local date, and it is the business date; the
        # ones it flags straddle midnight, and the job takes the date every zone has reached
        assert (len(local_dates) > 1) == bool(date_breaches)
        assert business_date_of(tick, ZONES) == min(local_dates) == local_times(tick, ZONES)[HONOLULU].date()


def test_suggested_hours_for_the_nightly_rule_are_1400_through_0300_utc() -> None:
    # Hand-derived: 04:00 in Honolulu (UTC-10, no DST) is 14:00Z, the latest "start of day" of
    # all zones; New York's midnight (04:00Z in summer) is the first hour the dates split.
    hours = suggest_utc_hours(NIGHTLY_RULE, ZONES, *YEAR_2027)

    assert hours == (0, 1, 2, 3, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23)
    assert describe_hours(hours) == "14:00-03:00"


def test_suggestion_for_new_york_and_los_angeles_starts_at_04_00_pacific_standard_time() -> None:
    # 04:00 PST is 12:00Z; 11:00Z is 04:00 PDT but 03:00 PST, so it fails in winter.
    hours = suggest_utc_hours(NIGHTLY_RULE, (NY, LA), *YEAR_2027)

    assert describe_hours(hours) == "12:00-03:00"


def test_no_hour_is_suggested_when_the_rule_cannot_hold_in_every_zone() -> None:
    # 04:00-06:00 local in both Tokyo (UTC+9) and New York cannot happen at one instant.
    rule = LocalTimeRule(not_before=time(4), not_after=time(6))

    assert suggest_utc_hours(rule, ("Asia/Tokyo", NY), *YEAR_2027) == ()


def test_between_berlins_offset_changes_09_00_local_is_one_utc_hour_each_and_the_advice_says_two_schedules() -> None:
    # Given 09:00 local in Berlin: 08:00Z in winter (CET), 07:00Z in summer (CEST)
    rule = LocalTimeRule(not_before=time(9), not_after=time(9, 59))
    assert suggest_utc_hours(rule, (BERLIN,), *YEAR_2027) == ()

    found = seasons(rule, (BERLIN,), *YEAR_2027)

    assert [(s.start, s.end, s.hours) for s in found] == [
        (YEAR_2027[0], utc("2027-03-28T01:00:00Z"), (8,)),
        (utc("2027-03-28T01:00:00Z"), utc("2027-10-31T01:00:00Z"), (7,)),
        (utc("2027-10-31T01:00:00Z"), YEAR_2027[1], (8,)),
    ]
    check = ScheduleCheck(
        job="digest", function_id="Fn", event_id="Tick", expression="cron(0 8 * * ? *)", timezone="UTC",
        declaration=TimeDeclaration("Fn", (BERLIN,), None, rule), ticks_checked=365, violations=(),
        not_expanded=None, suggested_hours=(), suggestion_minute=0, seasons=tuple(found),
    )  # fmt: skip
    advice = check.no_hour_advice or ""
    assert "two schedules, each bounded by StartDate/EndDate" in advice
    assert "cron(0 7 * * ? *) from 2027-03-28T01:00:00Z to 2027-10-31T01:00:00Z" in advice
    assert "ScheduleExpressionTimezone: Europe/Berlin" in advice


def test_07_30_local_in_new_york_and_chicago_is_advised_only_schedules_that_fire_and_a_job_per_zone() -> None:
    # Given 07:30 to 08:30 local in New York and Chicago: no one UTC hour holds it in both, and the
    # zones change their offsets an hour apart, so two of the stretches between changes are one hour long
    rule = LocalTimeRule(not_before=time(7, 30), not_after=time(8, 30))
    zones = (NY, CHICAGO)
    assert suggest_utc_hours(rule, zones, *YEAR_2027, minute=30) == ()
    found = seasons(rule, zones, *YEAR_2027, minute=30)
    assert [s.end - s.start for s in found].count(timedelta(hours=1)) == 2

    # When the advice is given
    per_zone = per_zone_hours(rule, zones, *YEAR_2027, minute=30)
    check = ScheduleCheck(
        job="notices", function_id="Fn", event_id="Tick", expression="cron(30 13 * * ? *)", timezone="UTC",
        declaration=TimeDeclaration("Fn", zones, None, rule), ticks_checked=365, violations=(),
        not_expanded=None, suggested_hours=(), suggestion_minute=30, seasons=tuple(found), per_zone=per_zone,
    )  # fmt: skip
    advice = check.no_hour_advice or ""

    # Then it lists only schedules that fire in their stretch, which still cover the year between them
    listed = firing_stretches(found, 30)
    assert [(hour, s.start, s.end) for hour, s in listed] == [
        (13, YEAR_2027[0], utc("2027-03-14T08:00:00Z")),
        (12, utc("2027-03-14T08:00:00Z"), utc("2027-11-07T07:00:00Z")),
        (13, utc("2027-11-07T07:00:00Z"), YEAR_2027[1]),
    ]
    assert advice.count(" from ") == 3
    assert "cron(30 8 * * ? *)" not in advice
    assert "cron(30 7 * * ? *)" not in advice
    # And, each zone holding it at one hour all year, a job per zone with its hour
    assert per_zone == ((NY, 12), (CHICAGO, 13))
    assert (
        "a job per zone, each with its one zone (OperatingTimeZones) and a daily UTC hour that keeps the rule there "
        f"all year: {NY} cron(30 12 * * ? *), {CHICAGO} cron(30 13 * * ? *)"
    ) in advice


def test_a_rule_no_hour_keeps_even_between_offset_changes_is_advised_to_be_widened() -> None:
    rule = LocalTimeRule(not_before=time(4), not_after=time(6))
    found = seasons(rule, ("Asia/Tokyo", NY), *YEAR_2027)
    check = ScheduleCheck(
        job="digest", function_id="Fn", event_id="Tick", expression="cron(0 8 * * ? *)", timezone="UTC",
        declaration=TimeDeclaration("Fn", ("Asia/Tokyo", NY), None, rule), ticks_checked=365, violations=(),
        not_expanded=None, suggested_hours=(), suggestion_minute=0, seasons=tuple(found),
    )  # fmt: skip

    assert "widen the rule (LocalTimeRule) or serve fewer zones (OperatingTimeZones)" in (check.no_hour_advice or "")


@pytest.mark.parametrize(
    ("hours", "runs", "described"),
    [
        ((14, 15, 23, 0, 1), [[14, 15], [23, 0, 1]], "14:00-15:00, 23:00-01:00"),
        ((5,), [[5]], "05:00"),
        ((), [], "none"),
        (tuple(range(24)), [list(range(24))], "every hour (at :00)"),
    ],
)
def test_hours_are_described_as_runs_that_wrap_past_midnight(
    hours: tuple[int, ...], runs: list[list[int]], described: str
) -> None:
    assert hour_runs(hours) == runs
    assert describe_hours(hours) == described


def test_new_york_changes_offset_twice_in_2027_at_the_hand_computed_instants() -> None:
    changes = offset_changes(NY, *YEAR_2027)

    assert [(c.at, c.before, c.after) for c in changes] == [
        (utc("2027-03-14T07:00"), "UTC-05:00", "UTC-04:00"),
        (utc("2027-11-07T06:00"), "UTC-04:00", "UTC-05:00"),
    ]
    assert offset_changes(PHOENIX, *YEAR_2027) == []


def test_a_year_from_29_february_ends_on_1_march() -> None:
    assert one_year_from(date(2028, 2, 29)) == (utc("2028-02-29T00:00"), utc("2029-03-01T00:00"))


@pytest.mark.parametrize(("expression", "minute"), [("cron(30 14 * * ? *)", 30), ("cron(0/15 * * * ? *)", 0)])
def test_suggestions_keep_the_schedules_own_minute(expression: str, minute: int) -> None:
    assert fixed_minute(expression) == minute


def test_violations_of_one_zone_and_clock_time_are_grouped_into_stretches_split_by_dst() -> None:
    # Given 03:00 PST breaches every winter day, and none while Los Angeles is on PDT
    days = [date(2027, 1, 1) + timedelta(days=n) for n in range(365)]
    winter = [datetime.combine(d, time(11), UTC) for d in days if not (date(2027, 3, 14) <= d < date(2027, 11, 7))]
    violations = tuple(
        LocalTimeViolation("job", "Fn", "Ev", NOT_BEFORE, "before 04:00 local", tick, LA, local_times(tick, [LA])[LA])
        for tick in winter
    )
    check = ScheduleCheck(
        job="job",
        function_id="Fn",
        event_id="Ev",
        expression="cron(0 11 * * ? *)",
        timezone="UTC",
        declaration=None,
        ticks_checked=365,
        violations=violations,
        not_expanded=None,
        suggested_hours=None,
        suggestion_minute=0,
    )

    # When they are grouped
    (group,) = check.groups()

    # Then one group holds them, in two stretches: until spring-forward and from fall-back
    assert group.runs() == [
        (utc("2027-01-01T11:00"), utc("2027-03-13T11:00"), 72),
        (utc("2027-11-07T11:00"), utc("2027-12-31T11:00"), 55),
    ]


# ---------------------------------------------------------------- declarations


def template_with(metadata: dict[str, Any]) -> Template:
    document = {
        "Parameters": {"Zones": {"Type": "CommaDelimitedList", "Default": f"{NY},{HONOLULU}"}},
        "Resources": {
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Metadata": {"clockless": metadata},
                "Properties": {"Events": {"Tick": {"Type": "ScheduleV2", "Properties": {}}}},
            }
        },
    }
    return Template(path=Path("template.yaml"), document=document)


def declaration_of(metadata: dict[str, Any]) -> Any:
    template = template_with(metadata)
    return read_declaration(template.function("Fn"), template)


def test_zones_named_through_a_parameter_resolve_to_its_default() -> None:
    declaration = declaration_of({"operating_time_zones": {"Ref": "Zones"}, "local_time_rule": "none"})

    assert declaration.zones == (NY, HONOLULU)
    assert declaration.zones_parameter == "Zones"
    assert declaration.rule is None


def test_a_parameter_override_replaces_the_declared_zones() -> None:
    template = with_parameter_overrides(
        template_with({"operating_time_zones": {"Ref": "Zones"}, "local_time_rule": "none"}), {"Zones": LA}
    )

    assert read_declaration(template.function("Fn"), template).zones == (LA,)


def test_an_override_of_an_unknown_parameter_is_refused() -> None:
    with pytest.raises(TemplateError, match="parameter override Zonez: the template declares no such parameter"):
        with_parameter_overrides(template_with({}), {"Zonez": LA})


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (
            {"operating_time_zones": [NY, "America/Gotham"], "local_time_rule": "none"},
            r"Fn\.Metadata\.clockless\.operating_time_zones: 'America/Gotham' is not an IANA time zone",
        ),
        (
            {"operating_time_zones": {"Ref": "Nope"}, "local_time_rule": "none"},
            r"operating_time_zones: !Ref Nope names no parameter",
        ),
        (
            {"operating_time_zones": [NY, NY], "local_time_rule": "none"},
            r"lists America/New_York more than once",
        ),
        (
            {"operating_time_zones": [NY], "local_time_rule": {"not_before": 240}},
            r'local_time_rule\.not_before: 240 is a number; quote the time, e\.g\. "04:00"',
        ),
        (
            {"operating_time_zones": [NY], "local_time_rule": {"not_before": "4am"}},
            r"local_time_rule\.not_before: '4am' is not a 24-hour HH:MM time",
        ),
        (
            {"operating_time_zones": [NY], "local_time_rule": {"after": "04:00"}},
            r"local_time_rule: unknown key\(s\) after; known: not_before, not_after, same_local_date",
        ),
        (
            {"operating_time_zones": [NY], "local_time_rule": {}},
            r"local_time_rule: checks nothing; write 'none'",
        ),
        (
            {"operating_time_zones": [NY], "local_time_rule": {"not_before": "09:00", "not_after": "04:00"}},
            r"not_before 09:00 is later than not_after",
        ),
        (
            {"operating_time_zones": [NY], "local_time_rule": {"same_local_date": "yes"}},
            r"same_local_date: expected true or false, got 'yes'",
        ),
        (
            {"operating_time_zones": [NY], "local_time_rule": "sometimes"},
            r"local_time_rule: expected 'none' or a mapping",
        ),
    ],
)
def test_a_malformed_declaration_is_refused_naming_the_key(metadata: dict[str, Any], message: str) -> None:
    with pytest.raises(DeclarationError, match=message):
        declaration_of(metadata)
