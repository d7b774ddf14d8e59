"""Rule rate-anchored, proven by planted violations; and a rate() anchored as the rule demands
surviving redeploys long after its anchor, where a literal StartDate is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clockless_tools.template.model import Template
from clockless_tools.template.rate_anchor import create_schedule_refusal, deploy_start_dates
from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"
HOURLY = f"{HOURLY_JOB.stem}Function.Events.Schedule"
ANCHOR = "2026-01-01T00:00:00Z"


def _rate(planted: PlantedCopy, start_date: str = "", expression: str = "rate(1 hour)") -> None:
    planted.replace(
        TEMPLATE,
        "ScheduleExpression: cron(0 * * * ? *)",
        f"ScheduleExpression: {expression}" + (f"\n            StartDate: {start_date}" if start_date else ""),
        after=CLEANUP,
    )


def _anchored(planted: PlantedCopy, anchor: str = ANCHOR, expression: str = "rate(1 hour)") -> Template:
    _rate(planted, f"!Ref {HOURLY_JOB.stem}RateStart", expression)
    planted.replace(
        TEMPLATE,
        "Parameters:\n",
        f'Parameters:\n  {HOURLY_JOB.stem}RateStart:\n    Type: String\n    Default: "{anchor}"\n',
    )
    return Template.load(planted.root / TEMPLATE)


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("rate-anchored") == []


def test_a_rate_schedule_without_a_start_date_is_caught(planted: PlantedCopy) -> None:
    _rate(planted)

    found(
        planted.violations("rate-anchored"), file=TEMPLATE, resource=HOURLY, containing="rate(1 hour) has no StartDate"
    )


def test_a_literal_past_start_date_is_caught(planted: PlantedCopy) -> None:
    _rate(planted, '"2026-01-01T00:00:00Z"')

    violation = found(planted.violations("rate-anchored"), file=TEMPLATE, resource=HOURLY, containing="a literal")
    assert "CreateSchedule refuses a StartDate more than 5 minutes in the past" in violation.message
    assert "!Ref" in violation.fix


def test_an_anchor_parameter_off_the_minute_is_caught_and_a_whole_minute_is_not(planted: PlantedCopy) -> None:
    _anchored(planted, anchor="2026-01-01T00:00:30Z")

    found(planted.violations("rate-anchored"), file=TEMPLATE, resource=HOURLY, containing="whole minutes")

    planted.replace(TEMPLATE, "2026-01-01T00:00:30Z", ANCHOR)

    assert planted.violations("rate-anchored") == []
    assert planted.violations("ticks-on-the-minute") == []


@pytest.mark.parametrize("expression", ["rate(1 hour)", "rate(7 minutes)", "rate(3 days)"])
def test_an_anchored_rate_survives_redeploys_long_after_its_anchor(planted: PlantedCopy, expression: str) -> None:
    template = _anchored(planted, expression=expression)
    [schedule] = [s for s in template.jobs.values() if s.expression == expression]
    declared = schedule.spec(template)
    anchor = datetime.fromisoformat(ANCHOR)

    for deployed_at in (anchor + timedelta(days=400, seconds=7), anchor + timedelta(days=3 * 365, minutes=59)):
        # A literal StartDate (the anchor itself) is what CreateSchedule refuses on such a redeploy...
        assert create_schedule_refusal(anchor, deployed_at) is not None
        # ...the deploy-time value is not, and keeps every tick where the template says it is.
        [(name, value)] = deploy_start_dates(template, deployed_at).items()
        assert name == f"{HOURLY_JOB.stem}RateStart"
        assert create_schedule_refusal(value, deployed_at) is None
        redeployed = schedule.spec(template).of(expression, timezone="UTC", start_date=value, end_date=None)
        week = (deployed_at, deployed_at + timedelta(days=7))
        assert redeployed.ticks_between(*week) == declared.ticks_between(*week)
        assert datetime.fromisoformat(value) - deployed_at < declared.nominal_period()


def test_the_deploy_value_of_a_tick_instant_is_that_tick(planted: PlantedCopy) -> None:
    template = _anchored(planted)
    on_a_tick = datetime(2027, 5, 1, 13, 0, tzinfo=UTC)

    assert deploy_start_dates(template, on_a_tick) == {f"{HOURLY_JOB.stem}RateStart": "2027-05-01T13:00:00Z"}
    assert deploy_start_dates(template, on_a_tick + timedelta(seconds=1)) == {
        f"{HOURLY_JOB.stem}RateStart": "2027-05-01T14:00:00Z"
    }
