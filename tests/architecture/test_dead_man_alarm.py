"""Rule dead-man-alarm: every scheduled job's alarm watches scheduled successes, stays quiet while
ticks succeed within the declared grace, and fires within grace + one period of a missed tick."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from clockless.schedule.expressions import ScheduleSpec
from clockless_tools.architecture import RULES, Project, check
from clockless_tools.architecture.alarm_timing import DeadManDefinition, Evaluation, simulate
from clockless_tools.architecture.dead_man_alarm import dead_man_alarm_problems, expected_alarm_shape
from clockless_tools.architecture.job_bounds import read_bounds
from clockless_tools.template.model import Template
from tests.architecture.planting import PlantedCopy
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
NIGHTLY = f"  {DAILY_JOB.stem}DeadManAlarm:"
HOURLY = f"  {HOURLY_JOB.stem}DeadManAlarm:"
AROUND = datetime(2027, 1, 11, tzinfo=UTC)


def _planted(planted: PlantedCopy, old: str, new: str, *, after: str = "") -> Template:
    """The planted copy's template.yaml with `old` (after the `after` marker) replaced by `new`."""
    planted.replace(TEMPLATE, old, new, after=after)
    return Template.load(planted.root / TEMPLATE)


def _problems(template: Template) -> list[tuple[str, str, str]]:
    return [(p.job, p.resource, p.message) for p in dead_man_alarm_problems(template)]


def test_every_job_in_the_template_has_a_dead_man_alarm_that_fires_on_time(template: Template) -> None:
    assert dead_man_alarm_problems(template) == []


@pytest.mark.parametrize(
    ("expression", "grace_minutes", "shape"),
    [
        ("cron(0 * * * ? *)", 45, (300, 21)),
        ("cron(0 14 * * ? *)", 120, (3600, 26)),
        ("rate(15 minutes)", 5, (300, 4)),
        # A local 01:30 is 25 hours after the day before when clocks go back.
        ("cron(30 1 * * ? *)", 60, (3600, 26)),
    ],
)
def test_alarm_shape_covers_the_longest_gap_plus_the_grace(
    expression: str, grace_minutes: int, shape: tuple[int, int]
) -> None:
    zone = "America/New_York" if "30 1" in expression else "UTC"
    spec = ScheduleSpec.of(expression, timezone=zone, start_date="2027-01-01T00:00:00Z")

    assert expected_alarm_shape(spec, timedelta(minutes=grace_minutes)) == shape


# ---------------------------------------------------------------- a simulated day of missing data


def test_how_long_after_a_missed_tick_each_jobs_alarm_fires(template: Template) -> None:
    """The numbers docs/alarms.md states, from the template's own alarm definitions."""
    hours = timedelta(hours=1)
    minutes = timedelta(minutes=1)
    expected = {
        # job: (complete periods only, period in progress too, previous success as late as its grace)
        DAILY_JOB.name: (4 * hours, 3 * hours, 6 * hours),
        HOURLY_JOB.name: (65 * minutes, 60 * minutes, 120 * minutes),
    }
    for job, (complete, partial, late_previous) in expected.items():
        schedule = template.jobs[job]
        definition = _definition(template, job)
        grace = read_bounds(template.function(schedule.function_id)).grace

        timing = simulate(definition, schedule.spec(template), grace, around=AROUND)

        assert timing.false_alarm is None
        assert timing.fires_after == {Evaluation.COMPLETE: complete, Evaluation.PARTIAL: partial}
        assert timing.fires_after_late_previous == late_previous


def test_the_one_day_period_alarm_it_replaces_fired_late_or_falsely() -> None:
    """Period 86400 over Sum, as the template had it: a day's period starts at 00:00 UTC, so the
    missed 14:00 tick is seen 10 h later, and if CloudWatch weighs the day in progress the alarm
    fires every night from 00:00 until the 14:00 tick succeeds."""
    daily = DeadManDefinition(period=86400, evaluation_periods=1, datapoints_to_alarm=1)

    timing = simulate(daily, ScheduleSpec.of("cron(0 14 * * ? *)"), timedelta(hours=2), around=AROUND)

    assert timing.fires_after[Evaluation.COMPLETE] == timedelta(hours=10)
    assert timing.false_alarm is not None


def _definition(template: Template, job: str) -> DeadManDefinition:
    def watched_job(query: dict[str, Any]) -> str | None:
        metric = (query.get("MetricStat") or {}).get("Metric") or {}
        return {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}.get("job")

    (props,) = [
        alarm["Properties"]
        for alarm in template.resources_of_type("AWS::CloudWatch::Alarm").values()
        for query in alarm["Properties"].get("Metrics") or []
        if watched_job(query) == job
    ]
    period = next(q["MetricStat"]["Period"] for q in props["Metrics"] if "MetricStat" in q)
    return DeadManDefinition(period, props["EvaluationPeriods"], props["DatapointsToAlarm"])


# ---------------------------------------------------------------- plants


def test_planted_alarm_that_counts_manual_runs_is_caught(planted: PlantedCopy) -> None:
    """Issue 11, finding 6: without trigger=schedule an HTTP press keeps the alarm quiet."""
    broken = _planted(
        planted, "                - Name: trigger\n                  Value: schedule\n", "", after=NIGHTLY
    )

    [(job, resource, message)] = _problems(broken)

    assert (job, resource) == (DAILY_JOB.name, f"{DAILY_JOB.stem}DeadManAlarm")
    assert "trigger=schedule" in message


def test_planted_alarm_on_the_manual_series_is_caught(planted: PlantedCopy) -> None:
    broken = _planted(planted, "Value: schedule", "Value: manual", after=HOURLY)

    [(job, _, message)] = _problems(broken)

    assert job == HOURLY_JOB.name
    assert "only trigger=schedule proves the schedule fires" in message


def test_planted_range_shorter_than_gap_plus_grace_is_caught_as_a_false_alarm(planted: PlantedCopy) -> None:
    broken = _planted(
        planted,
        "EvaluationPeriods: 27\n      DatapointsToAlarm: 27",
        "EvaluationPeriods: 26\n      DatapointsToAlarm: 26",
        after=NIGHTLY,
    )

    [(_, resource, message)] = _problems(broken)

    assert resource == f"{DAILY_JOB.stem}DeadManAlarm"
    assert "every tick succeeds within its grace" in message


def test_planted_range_far_longer_than_needed_is_caught_as_firing_late(planted: PlantedCopy) -> None:
    broken = _planted(
        planted,
        "EvaluationPeriods: 24\n      DatapointsToAlarm: 24",
        "EvaluationPeriods: 38\n      DatapointsToAlarm: 38",
        after=HOURLY,
    )

    [(_, resource, message)] = _problems(broken)

    assert resource == f"{HOURLY_JOB.stem}DeadManAlarm"
    assert "fires 2:15:00 after a missed tick" in message


def test_planted_alarm_without_fill_is_caught(planted: PlantedCopy) -> None:
    broken = _planted(planted, "Expression: FILL(succeeded, 0)", "Expression: succeeded * 1", after=NIGHTLY)

    [(_, _, message)] = _problems(broken)

    assert "FILL(TickSucceeded, 0)" in message


def test_planted_missing_data_not_breaching_is_caught(planted: PlantedCopy) -> None:
    broken = _planted(planted, "TreatMissingData: breaching", "TreatMissingData: notBreaching", after=HOURLY)

    [(job, _, message)] = _problems(broken)

    assert job == HOURLY_JOB.name
    assert "TreatMissingData" in message


def test_planted_one_of_n_is_caught(planted: PlantedCopy) -> None:
    broken = _planted(planted, "DatapointsToAlarm: 24", "DatapointsToAlarm: 1", after=HOURLY)

    [(_, _, message)] = _problems(broken)

    assert "every datapoint must breach" in message


def test_planted_function_without_a_grace_is_caught(planted: PlantedCopy) -> None:
    broken = _planted(planted, "        grace_minutes: 58\n", "", after=f"  {HOURLY_JOB.function_id}:")

    [(job, resource, message)] = _problems(broken)

    assert (job, resource) == (HOURLY_JOB.name, f"{HOURLY_JOB.stem}Function")
    assert "grace_minutes is not declared" in message


def test_planted_job_without_an_alarm_is_caught(planted: PlantedCopy) -> None:
    broken = _planted(planted, f"Value: {HOURLY_JOB.name}\n", "Value: some-other-job\n", after=HOURLY)

    [(job, resource, message)] = _problems(broken)

    assert (job, resource) == (HOURLY_JOB.name, f"{HOURLY_JOB.stem}Function")
    assert "no alarm" in message


def test_the_rule_engine_reports_it_by_name_file_and_resource(planted: PlantedCopy) -> None:
    broken = _planted(planted, "            Period: 3600\n", "            Period: 300\n", after=NIGHTLY)

    violations = [v for v in check(Project.for_template(broken.path), RULES) if v.rule == "dead-man-alarm"]

    assert [(v.file, v.resource) for v in violations] == [("template.yaml", f"{DAILY_JOB.stem}DeadManAlarm")]


def test_planted_grace_shorter_than_the_latest_success_is_caught(planted: PlantedCopy) -> None:
    broken = _planted(planted, "grace_minutes: 135", "grace_minutes: 90", after=f"  {DAILY_JOB.function_id}:")

    problems = _problems(broken)

    assert (DAILY_JOB.name, f"{DAILY_JOB.stem}Function") in [(job, resource) for job, resource, _ in problems]
    assert any(
        "shorter than the latest a tick can succeed (59 s invocation precision + 0 s flexible window + 3600 s "
        "Scheduler retries + 3600 s Lambda async retries + 120 s last attempt's Timeout + 285 s fan-out" in message
        for _, _, message in problems
    )


def test_planted_alarm_evaluating_the_raw_metric_is_caught(planted: PlantedCopy) -> None:
    _planted(planted, "          ReturnData: false\n", "          ReturnData: true\n", after=NIGHTLY)
    broken = _planted(
        planted,
        "Expression: FILL(succeeded, 0)\n          ReturnData: true\n",
        "Expression: FILL(succeeded, 0)\n          ReturnData: false\n",
        after=NIGHTLY,
    )

    [(_, resource, message)] = _problems(broken)

    assert resource == f"{DAILY_JOB.stem}DeadManAlarm"
    assert "must evaluate the FILL expression" in message
