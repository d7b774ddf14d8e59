"""How each tick will be delivered in a simulation: a seeded plan per tick (duplicates, concurrent
copies, failures and retries, late deliveries, lost answers, worker faults), so a run is
reproducible; and the reference replay's plan, each tick delivered once."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final

from clockless import format_scheduled_time
from clockless_tools.simulate.tables import job_tables
from clockless_tools.template.model import Schedule, Template
from clockless_tools.template.queues import literal_int

# Chances per tick; one tick per job gets all of them, so every run shows every kind.
P_REDELIVERY: Final = 0.3
P_FAILURE: Final = 0.25
P_SECOND_FAILURE: Final = 0.3
P_BURST: Final = 0.2
P_LATE: Final = 0.15
# The answer to one of the first attempt's requests (the kit's included) is lost and resent.
P_LOST_ANSWER: Final = 0.3
# A fanned-out tick's work message meets a worker fault on its first receive (every one of the
# showcase tick's does).
P_WORKER_FAULT: Final = 0.1
MAX_LOST_ANSWER_AT: Final = 6
MAX_BURST: Final = 8
# Lambda's asynchronous retries of a failed attempt: about 1 minute after it, then about 2.
RETRY_BACKOFF: Final = timedelta(seconds=60)
# Lambda's defaults when a function's EventInvokeConfig sets neither.
DEFAULT_MAX_RETRIES: Final = 2
DEFAULT_MAX_EVENT_AGE: Final = 21600


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed attempt is retried: the function's EventInvokeConfig. A function error (the
    injected failures) reaches Lambda, never Scheduler, whose RetryPolicy covers only handing the
    event over; so Lambda's bounds decide, the event's age counted from when Lambda received it."""

    max_retries: int
    max_event_age_seconds: int

    @classmethod
    def of(cls, template: Template, schedule: Schedule) -> RetryPolicy:
        config = template.function(schedule.function_id).event_invoke_config
        return cls(
            max_retries=_or(literal_int(config.get("MaximumRetryAttempts")), DEFAULT_MAX_RETRIES),
            max_event_age_seconds=_or(literal_int(config.get("MaximumEventAgeInSeconds")), DEFAULT_MAX_EVENT_AGE),
        )


def _or(stated: int | None, default: int) -> int:
    return default if stated is None else stated


@dataclass(frozen=True)
class TickPlan:
    """How one tick will be delivered. JSON-safe through `as_dict`/`from_dict` (it crosses processes)."""

    job: str
    function_id: str
    event_id: str
    scheduled_time: datetime
    first_at: datetime
    order: int
    id_seed: str
    burst: int = 1
    # when the copies arrive if the first attempt is armed (to fail or lose an answer; otherwise: with it)
    burst_at: datetime | None = None
    # attempt number -> the fault fires after this many of the delivery's domain requests
    fail_after: dict[int, int] = field(default_factory=dict)
    redelivery_at: datetime | None = None
    late_at: datetime | None = None
    # None: a failed delivery is not retried (the reference replay delivers each tick once)
    retries: RetryPolicy | None = None
    # the first attempt's request (counting all, the claim is 1) whose answer is lost and resent
    lose_answer: int | None = None
    # chance that a work message of this tick meets a worker fault (`simulate.workers`)
    worker_fault_rate: float = 0.0
    # A job that writes only the kit's own tables (the tick reaper writes the ledger): its faults
    # count those requests, or it would never meet one.
    count_spared: bool = False

    @property
    def key(self) -> str:
        return f"{self.job}@{format_scheduled_time(self.scheduled_time)}"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("scheduled_time", "first_at", "burst_at", "redelivery_at", "late_at"):
            if data[name] is not None:
                data[name] = data[name].isoformat()
        data["fail_after"] = {str(attempt): after for attempt, after in self.fail_after.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TickPlan:
        values = dict(data)
        for name in ("scheduled_time", "first_at", "burst_at", "redelivery_at", "late_at"):
            if values[name] is not None:
                values[name] = datetime.fromisoformat(values[name])
        values["fail_after"] = {int(attempt): int(after) for attempt, after in values["fail_after"].items()}
        values["retries"] = None if values["retries"] is None else RetryPolicy(**values["retries"])
        return cls(**values)


def plan_deliveries(
    template: Template,
    ticks: Mapping[str, list[datetime]],
    *,
    seed: int,
    dropped: Collection[tuple[str, datetime]] = (),
) -> list[TickPlan]:
    """Seeded delivery plans for every tick that is not dropped, in scheduled-time order."""
    plans: list[TickPlan] = []
    for job, times in ticks.items():
        schedule = template.jobs[job]
        spec = schedule.spec(template)
        # A late duplicate lands after the next tick; a one-time schedule has none, so a day later.
        period = timedelta(days=1) if spec.kind == "at" else spec.nominal_period()
        retries = RetryPolicy.of(template, schedule)
        count_spared = not job_tables(template, schedule.function_id)
        delivered = [moment for moment in times if (job, moment) not in dropped]
        showcase = random.Random(f"{seed}/{job}").choice(delivered) if delivered else None  # noqa: S311
        for moment in delivered:
            rng = random.Random(f"{seed}/{job}/{format_scheduled_time(moment)}")  # noqa: S311 - reproducible
            full = moment == showcase
            first_at = moment + timedelta(seconds=rng.randint(0, 59))  # Scheduler fires within its minute
            fail_after: dict[int, int] = {}
            if full or rng.random() < P_FAILURE:
                # The showcase tick fails on its first domain request, which every job makes (a job
                # of the kit's tables only: its first after the claim, whose answer it loses).
                fail_after[1] = (2 if count_spared else 1) if full else rng.randint(1, 8)
                if full or rng.random() < P_SECOND_FAILURE:
                    fail_after[2] = rng.randint(1, 8)
            burst = rng.randint(3, MAX_BURST) if full or rng.random() < P_BURST else 1
            plans.append(
                TickPlan(
                    job=job,
                    function_id=schedule.function_id,
                    event_id=schedule.event_id,
                    scheduled_time=moment,
                    first_at=first_at,
                    order=0,
                    id_seed=f"{seed}",
                    burst=burst,
                    burst_at=first_at + timedelta(seconds=rng.randint(1, 300)) if burst > 1 else None,
                    fail_after=fail_after,
                    redelivery_at=(
                        first_at + timedelta(seconds=rng.randint(1, 600))
                        if full or rng.random() < P_REDELIVERY
                        else None
                    ),
                    late_at=(
                        moment + period + timedelta(seconds=rng.randint(60, max(60, int(period.total_seconds()) // 2)))
                        if full or rng.random() < P_LATE
                        else None
                    ),
                    retries=retries,
                    # Last, so adding it left the other draws of a seed as they were. The showcase
                    # tick loses its claim's answer.
                    lose_answer=(
                        1 if full else (rng.randint(1, MAX_LOST_ANSWER_AT) if rng.random() < P_LOST_ANSWER else None)
                    ),
                    worker_fault_rate=1.0 if full else P_WORKER_FAULT,
                    count_spared=count_spared,
                )
            )
    plans.sort(key=lambda plan: (plan.scheduled_time, plan.job))
    return [replace(plan, order=index) for index, plan in enumerate(plans)]


def delivered_once(plan: TickPlan, *, at: datetime, order: int) -> TickPlan:
    """The reference replay's plan for a tick: delivered once, at `at`, never failed nor retried."""
    return TickPlan(
        job=plan.job,
        function_id=plan.function_id,
        event_id=plan.event_id,
        scheduled_time=plan.scheduled_time,
        first_at=at,
        order=order,
        id_seed=plan.id_seed,
    )
