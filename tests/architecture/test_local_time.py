"""Rule `local-time`: every UTC schedule keeps its job's local-time rule in every operating zone, all year.

`clockless schedules check` runs here on template.yaml (over the year from today and over 2027),
and on copies of it with planted violations, each of which it must catch.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clockless import format_scheduled_time
from clockless_tools.cli.app import app
from clockless_tools.template.intrinsics import resolve
from clockless_tools.template.loader import load_yaml
from clockless_tools.template.model import Template
from clockless_tools.timezones.check import TimeZoneReport, check_template
from clockless_tools.timezones.rule import DECLARED, NOT_BEFORE, SAME_LOCAL_DATE, UTC_SCHEDULE, ZONES_MATCH_ENVIRONMENT
from tests.jobs import DAY, HOUR, job_where

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The template's first daily job with a local-time rule (the example's: not before 04:00, one local
# date everywhere), and its first hourly one: the plants go into their schedules.
NIGHTLY_JOB = job_where(period=DAY, local_time_rule=True)
NIGHTLY = (NIGHTLY_JOB.function_id, "Schedule")
HOURLY = (job_where(period=HOUR).function_id, "Schedule")
FROM_2027 = date(2027, 1, 1)

runner = CliRunner()


@functools.cache
def original() -> Template:
    return Template.load(PROJECT_ROOT / "template.yaml")


def changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    document = copy.deepcopy(dict(original().document))
    change(document)
    return document


def plant(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of template.yaml in tmp_path, changed by `change` (which gets the parsed document)."""
    document = changed(change)
    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def schedule_of(document: dict[str, Any], where: tuple[str, str]) -> dict[str, Any]:
    function, event = where
    return document["Resources"][function]["Properties"]["Events"][event]["Properties"]  # type: ignore[no-any-return]


def nightly_at(expression: str, zones: str | None = None) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        schedule_of(document, NIGHTLY)["ScheduleExpression"] = expression
        if zones is not None:
            document["Parameters"]["OperatingTimeZones"]["Default"] = zones

    return change


def check(path: Path) -> TimeZoneReport:
    return check_template(Template.load(path), start=FROM_2027)


def nightly(report: TimeZoneReport) -> Any:
    (found,) = [c for c in report.schedules if (c.function_id, c.event_id) == NIGHTLY]
    return found


# ---------------------------------------------------------------- the template as it is


@pytest.mark.parametrize("year_from", [[], ["--from", "2027-01-01"]], ids=["year-from-today", "2027"])
def test_schedules_check_passes_on_the_template(year_from: list[str]) -> None:
    result = runner.invoke(app, ["schedules", "check", "--template", str(PROJECT_ROOT / "template.yaml"), *year_from])

    assert result.exit_code == 0, result.output
    assert "schedules check passed" in result.output
    assert "UTC hours that keep the rule in every zone all year: 14:00-03:00 (e.g. cron(0 14 * * ? *))" in result.output


def test_every_scheduled_function_declares_its_zones_as_the_parameter_its_environment_reads(
    template: Template,
) -> None:
    report = check_template(template, start=FROM_2027)

    assert {(c.function_id, c.event_id) for c in report.schedules} >= {NIGHTLY, HOURLY}
    own_zones = {
        entry["Name"]: entry.get("OperatingTimeZones") for entry in template.document["Mappings"]["Jobs"].values()
    }
    for schedule in report.schedules:
        assert schedule.declaration is not None, schedule.function_id
        # A job's own zones (Mappings.Jobs.<Id>.OperatingTimeZones), else the stack's parameter
        if own_zones.get(schedule.job):
            assert schedule.declaration.zones == tuple(own_zones[schedule.job]), schedule.job
        else:
            assert schedule.declaration.zones_parameter == "OperatingTimeZones", schedule.job
    # And each function's environment reads the zones it declares (rule zones_match_environment)
    assert not [v for v in report.violations if v.rule == ZONES_MATCH_ENVIRONMENT]
    assert nightly(report).ticks_checked == 365


@pytest.mark.parametrize("hour", range(24))
def test_the_suggested_hours_are_exactly_the_hours_the_linter_accepts(hour: int) -> None:
    # Given the hours the linter suggests for the nightly job
    suggested = nightly(check_template(original(), start=FROM_2027))
    assert suggested.suggested_hours

    # When the nightly schedule is moved to this hour
    moved = Template(path=original().path, document=changed(nightly_at(f"cron(0 {hour} * * ? *)")))
    report = check_template(moved, start=FROM_2027)

    # Then the linter passes it if and only if it suggested it
    assert nightly(report).ok == (hour in suggested.suggested_hours)


# ---------------------------------------------------------------- planted violations


def test_planted_hour_fine_in_new_york_but_too_early_in_los_angeles_is_caught(tmp_path: Path) -> None:
    # Given 11:00Z: 06:00/07:00 in New York, but 03:00 PST in Los Angeles all winter
    path = plant(tmp_path, nightly_at("cron(0 11 * * ? *)", zones="America/New_York,America/Los_Angeles"))

    # When the linter checks 2027
    report = check(path)

    # Then every winter tick breaks not_before in Los Angeles (72 days to 13 March, 55 from
    # 7 November) and New York is never named
    found = nightly(report)
    assert {(v.rule, v.zone) for v in found.violations} == {(NOT_BEFORE, "America/Los_Angeles")}
    (group,) = found.groups()
    assert {f"{v.local_time:%H:%M %Z}" for v in group.violations} == {"03:00 PST"}
    assert [(format_scheduled_time(a), format_scheduled_time(b), n) for a, b, n in group.runs()] == [
        ("2027-01-01T11:00:00Z", "2027-03-13T11:00:00Z", 72),
        ("2027-11-07T11:00:00Z", "2027-12-31T11:00:00Z", 55),
    ]
    assert found.suggested_expression == "cron(0 12 * * ? *)"

    # And the command fails, naming job, zone, local time and rule, with every tick in --json
    result = runner.invoke(app, ["schedules", "check", "-t", str(path), "--from", "2027-01-01"])
    assert result.exit_code == 1
    for expected in (f"FAIL {NIGHTLY_JOB.name}", "America/Los_Angeles", "03:00 PST (UTC-08:00)", "not_before"):
        assert expected in result.output
    as_json = runner.invoke(app, ["schedules", "check", "-t", str(path), "--from", "2027-01-01", "--json"])
    (planted,) = [s for s in json.loads(as_json.stdout)["schedules"] if s["violations"]]
    violations = planted["violations"]
    assert len(violations) == 127
    assert violations[0] == {
        "job": NIGHTLY_JOB.name,
        "function": NIGHTLY[0],
        "event": "Schedule",
        "rule": "not_before",
        "detail": "before 04:00 local",
        "tick": "2027-01-01T11:00:00Z",
        "zone": "America/Los_Angeles",
        "local_time": "2027-01-01T03:00:00-08:00",
        "utc_offset": "UTC-08:00",
    }


def test_planted_hour_that_crosses_the_date_line_in_honolulu_is_caught(tmp_path: Path) -> None:
    # Given 09:00Z: 23:00 of the day before in Honolulu, already the day itself everywhere else
    report = check(plant(tmp_path, nightly_at("cron(0 9 * * ? *)")))

    # When the date rule is looked at
    date_breaches = [v for v in nightly(report).violations if v.rule == SAME_LOCAL_DATE]

    # Then every tick of the year breaks it in Honolulu, a day behind, and nowhere else
    assert len(date_breaches) == 365
    assert {(v.zone, f"{v.local_time:%H:%M}", v.days_off) for v in date_breaches} == {("Pacific/Honolulu", "23:00", -1)}
    first = date_breaches[0]
    assert first.tick is not None
    assert (format_scheduled_time(first.tick), f"{first.local_time:%Y-%m-%d %H:%M %Z}") == (
        "2027-01-01T09:00:00Z",
        "2026-12-31 23:00 HST",
    )


def test_planted_rule_on_the_hourly_job_is_checked_at_every_tick_of_the_year(tmp_path: Path) -> None:
    # Given the hourly cleanup declared as "not before 04:00 local" in New York only
    def change(document: dict[str, Any]) -> None:
        document["Resources"][HOURLY[0]]["Metadata"]["clockless"] = {
            "operating_time_zones": ["America/New_York"],
            "local_time_rule": {"not_before": "04:00"},
        }

    # When a year of it is checked
    report = check(plant(tmp_path, change))

    # Then all 8760 ticks are expanded and exactly the local 00:00-03:59 ones break the rule: four
    # an hour a day, but three on spring-forward day (02:00 does not exist) and five on fall-back
    # day (01:00 happens twice, EDT then EST)
    (hourly,) = [c for c in report.schedules if (c.function_id, c.event_id) == HOURLY]
    assert hourly.ticks_checked == 8760
    local = [v.local_time for v in hourly.violations if v.local_time is not None]
    assert len(local) == 365 * 4
    assert [f"{t:%H:%M %Z}" for t in local if f"{t:%Y-%m-%d}" == "2027-03-14"] == [
        "00:00 EST",
        "01:00 EST",
        "03:00 EDT",
    ]
    assert [f"{t:%H:%M %Z}" for t in local if f"{t:%Y-%m-%d}" == "2027-11-07"] == [
        "00:00 EDT",
        "01:00 EDT",
        "01:00 EST",
        "02:00 EST",
        "03:00 EST",
    ]


@pytest.mark.parametrize("timezone", ["America/New_York", None], ids=["local-zone", "missing"])
def test_planted_schedule_not_in_utc_is_caught(tmp_path: Path, timezone: str | None) -> None:
    def change(document: dict[str, Any]) -> None:
        schedule = schedule_of(document, HOURLY)
        if timezone is None:
            del schedule["ScheduleExpressionTimezone"]
        else:
            schedule["ScheduleExpressionTimezone"] = timezone

    path = plant(tmp_path, change)

    report = check(path)

    (violation,) = report.violations
    assert (violation.function_id, violation.event_id, violation.rule) == (*HOURLY, UTC_SCHEDULE)
    assert ("'America/New_York'" if timezone else "missing") in violation.detail
    result = runner.invoke(app, ["schedules", "check", "-t", str(path), "--from", "2027-01-01"])
    assert result.exit_code == 1
    assert "utc_schedule" in result.output


def test_planted_scheduled_function_without_a_declaration_is_caught(tmp_path: Path) -> None:
    def change(document: dict[str, Any]) -> None:
        del document["Resources"][HOURLY[0]]["Metadata"]["clockless"]["local_time_rule"]

    (violation,) = check(plant(tmp_path, change)).violations

    assert (violation.function_id, violation.rule) == (HOURLY[0], DECLARED)
    assert "lacks local_time_rule" in violation.detail


def test_planted_zones_that_drift_from_the_functions_environment_are_caught(tmp_path: Path) -> None:
    def change(document: dict[str, Any]) -> None:
        variables = document["Resources"][NIGHTLY[0]]["Properties"]["Environment"]["Variables"]
        variables["OPERATING_TIME_ZONES"] = "America/New_York,America/Chicago"

    (violation,) = check(plant(tmp_path, change)).violations

    assert (violation.function_id, violation.rule) == (NIGHTLY[0], ZONES_MATCH_ENVIRONMENT)
    assert "OPERATING_TIME_ZONES is America/New_York, America/Chicago" in violation.detail


def test_planted_malformed_rule_is_bad_input_naming_the_key(tmp_path: Path) -> None:
    def change(document: dict[str, Any]) -> None:
        document["Resources"][NIGHTLY[0]]["Metadata"]["clockless"]["local_time_rule"] = "not_before=4am,same_local_date"

    result = runner.invoke(app, ["schedules", "check", "-t", str(plant(tmp_path, change))])

    assert result.exit_code == 2
    message = " ".join(result.output.split())  # the console wraps long lines
    assert f"{NIGHTLY[0]}.Metadata.clockless.local_time_rule.not_before: '4am' is not" in message


def test_a_parameter_override_is_checked_as_a_deploy_would_see_it() -> None:
    # Given a deploy that adds Guam (UTC+10): no UTC hour is 04:00+ there and in Honolulu on one date
    result = runner.invoke(
        app,
        [
            "schedules",
            "check",
            "-t",
            str(PROJECT_ROOT / "template.yaml"),
            "--from",
            "2027-01-01",
            "-p",
            "OperatingTimeZones=America/New_York,Pacific/Honolulu,Pacific/Guam",
        ],
    )

    assert result.exit_code == 1
    assert "no daily UTC hour keeps this rule in every zone all year" in result.output


# ---------------------------------------------------------------- the viewer


def test_schedules_show_prints_each_jobs_next_ticks_in_every_zone() -> None:
    args = ["schedules", "show", "-t", str(PROJECT_ROOT / "template.yaml"), "--after", "2027-03-13T12:00Z"]

    result = runner.invoke(app, [*args, "--count", "2", "--job", NIGHTLY_JOB.name])

    assert result.exit_code == 0, result.output
    # The day before and the day of spring-forward, by hand: 09:00 EST then 10:00 EDT, 04:00 HST both days.
    for expected in ("Sat 2027-03-13 14:00", "Sat 09:00 EST", "Sun 2027-03-14 14:00", "Sun 10:00 EDT", "Sun 04:00 HST"):
        assert expected in result.output
    shown = json.loads(runner.invoke(app, [*args, "--count", "3", "--json"]).stdout)
    assert [job["job"] for job in shown["jobs"]] == list(original().jobs)
    (hourly,) = [job["ticks"] for job in shown["jobs"] if job["function"] == HOURLY[0]]
    assert [tick["utc"] for tick in hourly] == ["2027-03-13T13:00:00Z", "2027-03-13T14:00:00Z", "2027-03-13T15:00:00Z"]
    assert hourly[0]["local"]["America/Anchorage"] == "2027-03-13T04:00:00-09:00"


def test_schedules_show_marks_ticks_that_break_the_rule(tmp_path: Path) -> None:
    path = plant(tmp_path, nightly_at("cron(0 9 * * ? *)"))

    shown = json.loads(
        runner.invoke(app, ["schedules", "show", "-t", str(path), "--after", "2027-01-01", "-n", "1", "--json"]).stdout
    )

    (nightly_job,) = [job for job in shown["jobs"] if job["function"] == NIGHTLY[0]]
    breaches = nightly_job["ticks"][0]["breaches"]
    assert {"rule": "same_local_date", "zone": "Pacific/Honolulu", "detail": "a day behind most zones"} in breaches


def test_schedules_show_refuses_an_unknown_job() -> None:
    result = runner.invoke(app, ["schedules", "show", "-t", str(PROJECT_ROOT / "template.yaml"), "--job", "nope"])

    assert result.exit_code == 2
    assert "unknown job 'nope'" in result.output


def test_a_job_declaring_its_own_zones_is_checked_in_them_and_its_function_reads_them() -> None:
    # Given the nightly job declaring its own zone and a local hour in it (Mappings.Jobs.<Id>)
    text = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
    block = f"  Jobs:\n    {NIGHTLY_JOB.stem}:\n"
    assert block in text
    own = "      OperatingTimeZones: [Europe/Berlin]\n      LocalTimeRule: not_before=09:00,not_after=09:59\n"
    text = _without_key_after(text.replace(block, block + own), block + own, "      LocalTimeRule:")
    template = Template(path=PROJECT_ROOT / "template.yaml", document=load_yaml(text))

    report = check_template(template, start=FROM_2027)

    # Then its ticks are checked in Berlin, its function's environment says Berlin, the others keep the stack's
    found = nightly(report)
    assert found.declaration is not None
    assert (found.declaration.zones, found.declaration.zones_parameter) == (("Europe/Berlin",), None)
    function = template.function(NIGHTLY[0])
    assert resolve(function.environment["OPERATING_TIME_ZONES"], template) == "Europe/Berlin"
    assert not [v for v in report.violations if v.rule == ZONES_MATCH_ENVIRONMENT]
    hourly = next(c for c in report.schedules if (c.function_id, c.event_id) == HOURLY)
    assert hourly.declaration is not None
    assert hourly.declaration.zones_parameter == "OperatingTimeZones"
    # And no one UTC hour keeps 09:00 Berlin all year: the check says what to do instead
    assert found.suggested_hours == ()
    assert "two schedules" in (found.no_hour_advice or "")


def _without_key_after(text: str, block: str, line_start: str) -> str:
    """`text` without the first line starting with `line_start` after `block`."""
    at = text.index(block) + len(block)
    start = text.index(line_start, at)
    return text[:start] + text[text.index("\n", start) + 1 :]


@pytest.mark.parametrize("expression", ["cron(0 0 31 2 ? *)", "cron(0 0 LW * ? *)", "cron(0 0 * * ?)"])
def test_schedules_check_gives_the_verdict_show_gives_whatever_the_rule(tmp_path: Path, expression: str) -> None:
    # GIVEN every job's schedule set to one that never fires or that Scheduler refuses (jobs whose
    # local-time rule is `none` included: their ticks are never expanded against a rule)
    text = (PROJECT_ROOT / "template.yaml").read_text()
    planted = re.sub(r"(?m)^(      Schedule: ).*$", lambda m: m.group(1) + expression, text)
    assert planted != text
    path = tmp_path / "template.yaml"
    path.write_text(planted)

    # WHEN check and show read it
    checked = runner.invoke(app, ["schedules", "check", "-t", str(path)])
    shown = runner.invoke(app, ["schedules", "show", "-t", str(path)])

    # THEN both refuse it with the same one line, and exit 2
    assert checked.exit_code == shown.exit_code == 2, checked.output
    assert checked.stderr.strip() == shown.stderr.strip()
    assert expression in checked.stderr
    assert len(checked.stderr.strip().splitlines()) == 1
