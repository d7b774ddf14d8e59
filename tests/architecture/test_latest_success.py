"""The dead-man grace covers the latest a tick can succeed, term by term: each term, grown in a
planted template, makes the rule refuse a grace one minute short of the new sum and accept the sum."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clockless_tools.architecture.dead_man_alarm import dead_man_alarm_problems
from clockless_tools.architecture.job_bounds import read_bounds
from clockless_tools.architecture.latest_success import Lateness, latest_success
from clockless_tools.architecture.latest_success import render_table as render_latest_success
from clockless_tools.architecture.schedule_delivery import check_schedule_delivery
from clockless_tools.template.model import Template
from tests.architecture.planting import PlantedCopy
from tests.conftest import PROJECT_ROOT
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
GRACE = "grace_minutes: 58"
CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"
JOB = HOURLY_JOB.name
Plant = Callable[[PlantedCopy], None]


def _grows_window(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        'FlexibleTimeWindow:\n              Mode: "OFF"',
        "FlexibleTimeWindow:\n              Mode: FLEXIBLE\n              MaximumWindowInMinutes: 15",
        after=CLEANUP,
    )


def _unsets_scheduler_age(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "              MaximumEventAgeInSeconds: 900\n", "", after=CLEANUP)


def _grows_lambda_age(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "MaximumEventAgeInSeconds: 1800", "MaximumEventAgeInSeconds: 3600", after=CLEANUP)


def _grows_timeout(planted: PlantedCopy) -> None:
    # The written-out coordinator states Timeout (Globals' 120 s, repeated for cfn-lint).
    planted.replace(TEMPLATE, "      Timeout: 120\n", "      Timeout: 600\n", after=CLEANUP)


def _grows_fan_out(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "expected_duration_seconds: 285",
        "expected_duration_seconds: 290",
        after=f"  {HOURLY_JOB.stem}WorkerFunction:\n",
    )


def _grows_hops(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "expected_duration_seconds: 285",
        "expected_duration_seconds: 285\n        expected_hops: 3",
        after=f"  {HOURLY_JOB.stem}WorkerFunction:\n",
    )


def _grows_worker_timeout(planted: PlantedCopy) -> None:
    worker = f"  {HOURLY_JOB.stem}WorkerFunction:\n"
    planted.replace(TEMPLATE, "      Timeout: 300\n", "      Timeout: 360\n", after=worker)


TERMS: dict[str, tuple[Plant, str]] = {
    "flexible window": (_grows_window, "window"),
    "Scheduler's default retry age when unset": (_unsets_scheduler_age, "scheduler_retries"),
    "Lambda's retry age": (_grows_lambda_age, "lambda_retries"),
    "the last attempt's Timeout": (_grows_timeout, "last_run"),
    "the fan-out's expected duration": (_grows_fan_out, "fan_out"),
    "the worker's continuations": (_grows_hops, "continuations"),
    "a failed partition's redelivery": (_grows_worker_timeout, "redelivery"),
}


def _lateness(template: Template) -> Lateness:
    return latest_success(template, template.jobs[JOB])


def _grace_refused(template: Template) -> bool:
    return any(
        p.job == JOB and "shorter than the latest a tick can succeed" in p.message
        for p in dead_man_alarm_problems(template)
    )


def test_the_template_states_each_term_and_its_graces_cover_them(template: Template) -> None:
    for job, schedule in template.jobs.items():
        lateness = latest_success(template, schedule)
        assert lateness.precision == 59
        assert lateness.last_run == template.function(schedule.function_id).timeout
        assert not _grace_refused(template), job


@pytest.mark.parametrize("term", list(TERMS))
def test_each_term_grown_refuses_a_grace_one_minute_short_and_accepts_the_sum(
    term: str, planted: PlantedCopy, template: Template
) -> None:
    plant, field = TERMS[term]
    before = _lateness(template)
    plant(planted)
    grown = _lateness(Template.load(planted.root / TEMPLATE))
    assert getattr(grown, field) > getattr(before, field), term

    planted.replace(TEMPLATE, GRACE, f"grace_minutes: {grown.minimum_grace_minutes - 1}", after=CLEANUP)
    short = Template.load(planted.root / TEMPLATE)
    planted.replace(
        TEMPLATE,
        f"grace_minutes: {grown.minimum_grace_minutes - 1}",
        f"grace_minutes: {grown.minimum_grace_minutes}",
        after=CLEANUP,
    )
    enough = Template.load(planted.root / TEMPLATE)

    assert _grace_refused(short), term
    assert not _grace_refused(enough), term


def test_a_flexible_window_counts_against_the_period_in_schedule_delivery(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        'FlexibleTimeWindow:\n              Mode: "OFF"',
        "FlexibleTimeWindow:\n              Mode: FLEXIBLE\n              MaximumWindowInMinutes: 50",
        after=CLEANUP,
    )
    messages = [v.message for v in check_schedule_delivery(planted.project)]
    assert any("flexible window 3000 s + RetryPolicy.MaximumEventAgeInSeconds 900 s" in m for m in messages)


def test_flexible_without_a_maximum_is_refused(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        'FlexibleTimeWindow:\n              Mode: "OFF"',
        "FlexibleTimeWindow:\n              Mode: FLEXIBLE",
        after=CLEANUP,
    )
    messages = [v.message for v in check_schedule_delivery(planted.project)]
    assert any("FLEXIBLE without a literal MaximumWindowInMinutes" in m for m in messages)


def test_the_latest_success_table_states_each_jobs_sum_and_grace(template: Template) -> None:
    # docs/alarms.md shows this table as a generated block (`clockless docs --check` keeps it current)
    table = render_latest_success(template).splitlines()
    for job, schedule in template.jobs.items():
        lateness = latest_success(template, schedule)
        terms = [lateness.precision, lateness.window, lateness.scheduler_retries, lateness.lambda_retries]
        fan_out = [lateness.fan_out, lateness.continuations, lateness.redelivery]
        sum_text = " + ".join(f"{t:,}" for t in [*terms, lateness.last_run, *fan_out])
        grace = read_bounds(template.function(schedule.function_id)).grace.total_seconds() // 60
        (row,) = [line for line in table if line.startswith(f"| {job} |")]
        assert f"{sum_text} = {lateness.total:,} s | {grace:.0f} min ({lateness.minimum_grace_minutes} min) |" in row
    page = (PROJECT_ROOT / "docs" / "alarms.md").read_text(encoding="utf-8")
    assert "<!-- generated by `clockless schedules latest-success`; `make docs` rewrites it -->" in page
