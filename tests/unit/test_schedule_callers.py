"""Every part that needs ticks asks the tick engine: status/backfill, simulate, events, schedules show."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from clockless_tools.operations.status import expected_ticks
from clockless_tools.operations.targets import OperationError
from clockless_tools.simulate.request import expected_ticks as expected_ticks_by_job
from clockless_tools.template.events import sample_events
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template
from clockless_tools.timezones.upcoming import upcoming_ticks
from tests.jobs import DAY, HOUR, job_where

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
CLEANUP = HOURLY_JOB.name


def _with_cleanup_schedule(template: Template, **properties: Any) -> Template:
    document = copy.deepcopy(dict(template.document))
    event = document["Resources"][f"{HOURLY_JOB.stem}Function"]["Properties"]["Events"]["Schedule"]["Properties"]
    event.update(properties)
    return Template(path=template.path, document=document)


def test_backfill_lists_the_ticks_a_rate_schedule_really_had(template: Template) -> None:
    rated = _with_cleanup_schedule(template, ScheduleExpression="rate(1 hour)", StartDate="2026-11-01T00:20:00Z")
    window_start = datetime(2026, 11, 29, 7, 17, 23, 456789, tzinfo=UTC)
    spec = rated.jobs[CLEANUP].spec(rated)

    missing = expected_ticks(spec, window_start, window_start + timedelta(hours=3))

    assert missing == [datetime(2026, 11, 29, hour, 20, tzinfo=UTC) for hour in (7, 8, 9)]


def test_simulate_stops_at_the_end_date(template: Template) -> None:
    ending = _with_cleanup_schedule(template, EndDate="2026-11-29T03:00:00Z")

    ticks = expected_ticks_by_job(ending, datetime(2026, 11, 29, tzinfo=UTC), datetime(2026, 11, 29, 6, tzinfo=UTC))

    assert ticks[CLEANUP] == [datetime(2026, 11, 29, hour, tzinfo=UTC) for hour in (0, 1, 2)]


def test_a_one_time_schedule_gets_sample_events_at_its_tick(template: Template) -> None:
    once = _with_cleanup_schedule(
        template, ScheduleExpression="at(2026-03-29T02:30:00)", ScheduleExpressionTimezone="America/New_York"
    )

    samples = sample_events(once.jobs[CLEANUP])

    assert samples["tick"]["scheduled_time"] == "2026-03-29T06:30:00Z"


def test_schedules_show_places_a_local_zone_schedule_in_its_zone(template: Template) -> None:
    berlin = _with_cleanup_schedule(
        template, ScheduleExpression="cron(30 2 * * ? *)", ScheduleExpressionTimezone="Europe/Berlin"
    )

    (shown,) = [u for u in upcoming_ticks(berlin, after=datetime(2027, 3, 27, tzinfo=UTC), count=3) if u.job == CLEANUP]

    # 28 March 2027: Berlin skips 02:00-03:00, so that night has no 02:30.
    assert shown.ticks == (
        datetime(2027, 3, 27, 1, 30, tzinfo=UTC),
        datetime(2027, 3, 29, 0, 30, tzinfo=UTC),
        datetime(2027, 3, 30, 0, 30, tzinfo=UTC),
    )
    assert shown.note is not None
    assert "not UTC" in shown.note


def test_a_rate_without_start_date_is_refused_by_the_operations(template: Template) -> None:

    rated = _with_cleanup_schedule(template, ScheduleExpression="rate(1 hour)")

    with pytest.raises(OperationError, match="has no StartDate"):
        expected_ticks(
            rated.jobs[CLEANUP].spec(rated), datetime(2026, 11, 29, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC)
        )


def test_events_refuse_a_rate_without_start_date_naming_the_schedule(template: Template) -> None:
    rated = _with_cleanup_schedule(template, ScheduleExpression="rate(1 hour)")

    with pytest.raises(
        TemplateError, match=rf"{HOURLY_JOB.stem}Function\.Events\.Schedule: rate\(1 hour\) has no Start"
    ):
        sample_events(rated.jobs[CLEANUP])


def test_a_start_date_given_as_a_parameter_is_read_from_its_default(template: Template) -> None:
    rated = _with_cleanup_schedule(template, ScheduleExpression="rate(1 hour)", StartDate={"Ref": "CleanupStart"})
    rated.document["Parameters"]["CleanupStart"] = {"Type": "String", "Default": "2026-11-01T00:20:00Z"}

    spec = rated.jobs[CLEANUP].spec(rated)

    assert spec.start_date == datetime(2026, 11, 1, 0, 20, tzinfo=UTC)
