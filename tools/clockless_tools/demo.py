"""`make run`: both jobs on the embedded DynamoDB, each tick delivered again and again the way
production can deliver it (a duplicate, a scheduler retry, a concurrent burst), then the effects
counted in the tables and checked against what the seeded data says they must be."""

from __future__ import annotations

import contextlib
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import boto3

from clockless import Tick, Trigger
from clockless_tools.local import EmbeddedDynamoDB, create_tables, local_environment, patched_environ
from clockless_tools.runtime import LocalLambdaRuntime
from clockless_tools.schedule import previous_tick
from clockless_tools.seed import SeedPlan, plan_data, seed, windows_needed
from clockless_tools.template import LocalNames, Template

BURST = 8


@dataclass
class JobReport:
    job: str
    function_id: str
    scheduled_time: str
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: int = 0
    effect_name: str = ""
    effects_expected: int = 0
    effects_observed: int = 0

    @property
    def deliveries(self) -> int:
        return sum(self.outcomes.values()) + self.failures

    @property
    def executions(self) -> int:
        return self.outcomes["executed"]

    @property
    def duplicates_suppressed(self) -> int:
        return self.outcomes["duplicate"] + self.outcomes["duplicate_in_progress"]

    @property
    def exactly_once(self) -> bool:
        return self.executions == 1 and self.effects_observed == self.effects_expected

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "function": self.function_id,
            "scheduled_time": self.scheduled_time,
            "deliveries": self.deliveries,
            "executions": self.executions,
            "duplicates_suppressed": self.duplicates_suppressed,
            "failures": self.failures,
            "effect": self.effect_name,
            "effects_expected": self.effects_expected,
            "effects_observed": self.effects_observed,
            "exactly_once": self.exactly_once,
        }


def delivery_plan(tick: Tick) -> list[list[dict[str, Any]]]:
    """Rounds of deliveries of one tick; the deliveries inside a round arrive concurrently."""

    def delivery(attempt: int, execution_id: str | None = None) -> dict[str, Any]:
        event = Tick(
            job=tick.job,
            scheduled_time=tick.scheduled_time,
            schedule_arn=tick.schedule_arn,
            attempt=attempt,
            execution_id=execution_id or str(uuid.uuid4()),
            trigger=Trigger.SCHEDULE,
        ).to_event()
        return event

    first = delivery(1)
    return [
        [first],  # the tick
        [dict(first)],  # Lambda delivers the same event twice
        [delivery(2)],  # the scheduler retries with a new execution id
        [delivery(1) for _ in range(BURST)],  # a concurrent burst
    ]


def _deliver_rounds(
    runtime: LocalLambdaRuntime, function_id: str, rounds: list[list[dict[str, Any]]], report: JobReport
) -> None:
    with runtime.function_environment(function_id), ThreadPoolExecutor(max_workers=BURST) as pool:
        for round_events in rounds:
            futures = [pool.submit(runtime.call, function_id, event) for event in round_events]
            for future in futures:
                try:
                    report.outcomes[future.result()["outcome"]] += 1
                except Exception:
                    report.failures += 1


def _count_items(endpoint: str, table: str) -> int:
    client = boto3.client("dynamodb", endpoint_url=endpoint)
    paginator = client.get_paginator("scan")
    return sum(page["Count"] for page in paginator.paginate(TableName=table, Select="COUNT"))


def run_demo(
    template: Template,
    *,
    now: datetime | None = None,
    plan: SeedPlan = SeedPlan(),
    function_output: TextIO | None = None,
    progress: Callable[[str], None] = lambda _message: None,
) -> list[JobReport]:
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    names = LocalNames()
    windows_fn = template.function_for_job("window-generation")
    cleanup_fn = template.function_for_job("session-cleanup")
    window_tick_time = previous_tick(template.jobs["window-generation"].expression, now)
    cleanup_tick_time = previous_tick(template.jobs["session-cleanup"].expression, now)

    redirect = contextlib.redirect_stdout(function_output) if function_output else contextlib.nullcontext()
    # Handlers' logs and metrics go to stdout, as in Lambda; the redirect is in place before any
    # handler is imported, because Powertools binds its stream when the logger is created.
    with redirect, EmbeddedDynamoDB() as db, patched_environ(local_environment(db.endpoint)):
        progress(f"embedded DynamoDB on {db.endpoint}")
        create_tables(template, db.endpoint, names)
        runtime = LocalLambdaRuntime(template, db.endpoint, names)

        with runtime.function_environment(windows_fn.logical_id):
            from window_generation.logic import business_date_of
            from window_generation.settings import WindowGenerationSettings

            zones = WindowGenerationSettings.from_env().operating_time_zones
        business_date = business_date_of(window_tick_time, zones)
        data = plan_data(plan, business_date=business_date, now=cleanup_tick_time)
        seed(
            data,
            programs_table=names.table_name("ProgramsTable"),
            windows_table=names.table_name("WindowsTable"),
            sessions_table=names.table_name("SessionsTable"),
        )
        progress(
            f"seeded {len(data.active_programs) + len(data.ended_programs)} programs and "
            f"{len(data.sessions)} sessions across {plan.tenants} tenants"
        )

        grace_minutes = int(runtime.environment(cleanup_fn.logical_id)["EMPTY_SESSION_GRACE_MINUTES"])
        cutoff = cleanup_tick_time.timestamp() - grace_minutes * 60
        reports = [
            JobReport(
                job="window-generation",
                function_id=windows_fn.logical_id,
                scheduled_time=window_tick_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                effect_name="windows created",
                effects_expected=sum(windows_needed(p, business_date) for p in data.active_programs),
            ),
            JobReport(
                job="session-cleanup",
                function_id=cleanup_fn.logical_id,
                scheduled_time=cleanup_tick_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                effect_name="sessions deleted",
                effects_expected=sum(
                    1
                    for s in data.sessions
                    if s.started_at.timestamp() <= cutoff
                    and (s.tenant_id, s.session_id) not in data.sessions_with_exercise
                ),
            ),
        ]
        sessions_before = _count_items(db.endpoint, names.table_name("SessionsTable"))
        for report, tick_time in ((reports[0], window_tick_time), (reports[1], cleanup_tick_time)):
            schedule_arn = f"arn:aws:scheduler:{names.region}:{names.account_id}:schedule/default/{report.job}"
            tick = Tick(report.job, tick_time, schedule_arn, 1, None, Trigger.SCHEDULE)
            _deliver_rounds(runtime, report.function_id, delivery_plan(tick), report)
            progress(f"{report.job}: delivered {report.deliveries} times")
        reports[0].effects_observed = _count_items(db.endpoint, names.table_name("WindowsTable"))
        reports[1].effects_observed = sessions_before - _count_items(db.endpoint, names.table_name("SessionsTable"))
    return reports


def default_log_path() -> Path:
    path = Path(".clockless") / "demo-function-output.log"
    path.parent.mkdir(exist_ok=True)
    return path
