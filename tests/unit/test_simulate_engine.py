"""simulate/engine.py: the seeded delivery plan, with no DynamoDB."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from clockless_tools.simulate.plan import TickPlan, plan_deliveries
from clockless_tools.simulate.request import expected_ticks
from clockless_tools.template.model import Template
from tests.jobs import DAY, HOUR, job_where, jobs

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
START, END = datetime(2026, 11, 27, tzinfo=UTC), datetime(2026, 11, 29, tzinfo=UTC)


def _plans(template: Template, seed: int, dropped: set[tuple[str, datetime]] | None = None) -> list[TickPlan]:
    return plan_deliveries(template, expected_ticks(template, START, END), seed=seed, dropped=dropped or set())


def test_the_plan_is_the_same_for_the_same_seed_and_differs_for_another(template: Template) -> None:
    assert _plans(template, 3) == _plans(template, 3)
    assert _plans(template, 3) != _plans(template, 4)


def test_every_job_has_a_tick_that_gets_every_kind_of_delivery(template: Template) -> None:
    for job in template.jobs:
        plans = [plan for plan in _plans(template, 1) if plan.job == job]

        assert any(plan.burst > 1 and 1 in plan.fail_after and plan.redelivery_at and plan.late_at for plan in plans), (
            job
        )


def test_deliveries_fall_where_production_puts_them(template: Template) -> None:
    periods = {job.name: job.period for job in jobs(template)}
    for plan in _plans(template, 2):
        period = periods[plan.job]
        # Scheduler fires within the tick's minute.
        assert timedelta(0) <= plan.first_at - plan.scheduled_time < timedelta(minutes=1)
        # A late delivery arrives after the job's next tick.
        if plan.late_at is not None:
            assert plan.late_at > plan.scheduled_time + period
        assert plan.retries is not None
        config = template.function(plan.function_id).event_invoke_config
        assert plan.retries.max_retries == config["MaximumRetryAttempts"]
        assert plan.retries.max_event_age_seconds == config["MaximumEventAgeInSeconds"]


def test_a_dropped_tick_is_never_delivered_and_the_others_keep_their_plans(template: Template) -> None:
    dropped = (HOURLY_JOB.name, datetime(2026, 11, 28, 3, tzinfo=UTC))

    plans = _plans(template, 5, {dropped})
    kept = {plan.key: plan for plan in _plans(template, 5)}

    assert f"{HOURLY_JOB.name}@2026-11-28T03:00:00Z" not in {plan.key for plan in plans}
    assert len(plans) == len(kept) - 1
    for plan in plans:
        assert (plan.fail_after, plan.burst, plan.first_at) == (
            kept[plan.key].fail_after,
            kept[plan.key].burst,
            kept[plan.key].first_at,
        )


def test_a_plan_survives_the_trip_between_processes(template: Template) -> None:
    for plan in _plans(template, 6):
        assert TickPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan
