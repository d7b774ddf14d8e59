"""How ticks reach a function in the simulator: the plan (seeded, so a run is reproducible) and
the engine that carries it out in simulated time.

A tick is delivered at least once, the way production does it: the scheduler fires within its
minute; Lambda may hand the same event over twice; several copies may arrive at once; a failed
attempt is retried with the attempt number raised and a new execution id; and a delivery may
arrive after the job's next tick. The engine is reactive like the scheduler: a delivery that
fails is retried (within the schedule's `RetryPolicy`) because it failed, not because a plan said so.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from clockless import OUTCOME_DUPLICATE, OUTCOME_EXECUTED, OUTCOME_IN_PROGRESS, format_scheduled_time
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.simulate.faults import FaultInjector, InjectedFault
from clockless_tools.simulate.workers import WorkerDriver, WorkerRecord
from clockless_tools.template.events import Attempt, render_input, schedule_arn, stable_uuid
from clockless_tools.template.model import Schedule, Template

OUTCOME_FAILED: Final = "failed"
SUPPRESSED: Final = frozenset({OUTCOME_DUPLICATE, OUTCOME_IN_PROGRESS})
# A delivery that returned one of these means the tick's work is done (by it or by an earlier one).
TOOK_EFFECT: Final = frozenset({OUTCOME_EXECUTED, OUTCOME_DUPLICATE})

KIND_TICK: Final = "tick"  # the scheduler's invocation, attempt 1
KIND_RETRY: Final = "retry"  # after a failed delivery: attempt + 1, new execution id
KIND_CONCURRENT: Final = "concurrent"  # extra copies arriving together with an attempt
KIND_REDELIVERY: Final = "redelivery"  # the very same event again (Lambda's at-least-once)
KIND_LATE: Final = "late"  # a scheduler retry that arrives after the job's next tick
KINDS: Final = (KIND_TICK, KIND_RETRY, KIND_CONCURRENT, KIND_REDELIVERY, KIND_LATE)

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
RETRY_BACKOFF: Final = timedelta(seconds=60)
# EventBridge Scheduler's defaults when a schedule sets no RetryPolicy.
DEFAULT_MAX_RETRIES: Final = 185
DEFAULT_MAX_EVENT_AGE: Final = 86400


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    max_event_age_seconds: int

    @classmethod
    def of(cls, schedule: Schedule) -> RetryPolicy:
        policy = schedule.properties.get("RetryPolicy")
        policy = policy if isinstance(policy, Mapping) else {}
        return cls(
            max_retries=int(policy.get("MaximumRetryAttempts", DEFAULT_MAX_RETRIES)),
            max_event_age_seconds=int(policy.get("MaximumEventAgeInSeconds", DEFAULT_MAX_EVENT_AGE)),
        )


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
        retries = RetryPolicy.of(schedule)
        delivered = [moment for moment in times if (job, moment) not in dropped]
        showcase = random.Random(f"{seed}/{job}").choice(delivered) if delivered else None  # noqa: S311
        for moment in delivered:
            rng = random.Random(f"{seed}/{job}/{format_scheduled_time(moment)}")  # noqa: S311 - reproducible
            full = moment == showcase
            first_at = moment + timedelta(seconds=rng.randint(0, 59))  # Scheduler fires within its minute
            fail_after: dict[int, int] = {}
            if full or rng.random() < P_FAILURE:
                # The showcase tick fails on its first domain request, which every job makes.
                fail_after[1] = 1 if full else rng.randint(1, 8)
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
                )
            )
    plans.sort(key=lambda plan: (plan.scheduled_time, plan.job))
    return [replace(plan, order=index) for index, plan in enumerate(plans)]


@dataclass(frozen=True)
class DeliveryRecord:
    """What one delivery did. `round` orders deliveries; deliveries of one round ran concurrently."""

    job: str
    scheduled_time: str
    at: str
    round: int
    kind: str
    attempt: int
    execution_id: str
    outcome: str
    error: str | None = None
    injected: bool = False
    # for an injected failure: domain writes that had taken effect before it (a partial run)
    writes_done: int = 0
    retried: bool = False
    # answers lost on their way back (and resent by botocore) during this delivery
    responses_lost: int = 0

    @property
    def tick_key(self) -> str:
        return f"{self.job}@{self.scheduled_time}"


@dataclass(order=True)
class _Round:
    at: datetime
    order: int
    sequence: int
    plan: TickPlan = field(compare=False)
    kind: str = field(compare=False)
    attempt: int = field(compare=False)
    chain: str = field(compare=False)
    retry_number: int = field(compare=False, default=0)


class Clock(Protocol):
    def move_to(self, destination: datetime, tick: bool | None = None) -> None: ...


class DeliveryEngine:
    """Carries out plans in simulated time: moves the clock to each round, delivers its events
    (concurrently when there are several), and retries failures as the scheduler would."""

    def __init__(
        self,
        template: Template,
        runtime: LocalLambdaRuntime,
        faults: FaultInjector,
        clock: Clock,
        *,
        progress: Callable[[int, int], None] = lambda _done, _queued: None,
        took_effect: Callable[[TickPlan, DeliveryRecord], None] = lambda _plan, _record: None,
        workers: WorkerDriver | None = None,
    ) -> None:
        self.template = template
        self.runtime = runtime
        self.faults = faults
        self.clock = clock
        self.progress = progress
        self.took_effect = took_effect
        self._queue: list[_Round] = []
        self._sequence = 0
        self._rounds = 0
        self._effective: set[str] = set()
        # The fanned-out ticks' workers, drained after each round and when a message comes back.
        self.workers = workers if workers is not None and workers.active else None
        self.worker_records: list[WorkerRecord] = []

    def _push(
        self, at: datetime, plan: TickPlan, *, kind: str, attempt: int, chain: str, retry_number: int = 0
    ) -> None:
        self._sequence += 1
        heapq.heappush(self._queue, _Round(at, plan.order, self._sequence, plan, kind, attempt, chain, retry_number))

    def run(self, plans: list[TickPlan]) -> list[DeliveryRecord]:
        """Deliver the plans (and the retries their failures call for) in simulated-time order.
        May be called again with more plans; rounds keep counting across calls."""
        for plan in plans:
            if self.workers is not None:
                self.workers.fault_rates[plan.key] = plan.worker_fault_rate
            self._push(plan.first_at, plan, kind=KIND_TICK, attempt=1, chain=KIND_TICK)
            if plan.burst > 1 and (1 in plan.fail_after or plan.lose_answer is not None):
                # An armed delivery is always alone in its round: the copies come a little later.
                self._push(plan.burst_at or plan.first_at, plan, kind=KIND_CONCURRENT, attempt=1, chain=KIND_TICK)
            if plan.redelivery_at is not None:
                self._push(plan.redelivery_at, plan, kind=KIND_REDELIVERY, attempt=1, chain=KIND_TICK)
            if plan.late_at is not None:
                self._push(plan.late_at, plan, kind=KIND_LATE, attempt=2 + len(plan.fail_after), chain=KIND_LATE)
        records: list[DeliveryRecord] = []
        with ThreadPoolExecutor(max_workers=MAX_BURST) as pool:
            while self._queue or self._wake() is not None:
                wake = self._wake()
                if wake is not None and (not self._queue or wake < self._queue[0].at):
                    self._drain(wake)  # a message left in flight is visible again
                    continue
                current = heapq.heappop(self._queue)
                delivered = self._deliver_round(pool, current, self._rounds)
                self._drain(current.at)
                self._rounds += 1
                records.extend(delivered)
                for record in delivered:
                    if record.outcome in TOOK_EFFECT and current.plan.key not in self._effective:
                        self._effective.add(current.plan.key)
                        self.took_effect(current.plan, record)
                self.progress(self._rounds, len(self._queue))
        return records

    def _wake(self) -> datetime | None:
        return None if self.workers is None else self.workers.next_wake()

    def _drain(self, at: datetime) -> None:
        if self.workers is not None:
            self.clock.move_to(at, tick=False)
            self.worker_records.extend(self.workers.drain(at))

    def _events(self, current: _Round) -> list[tuple[str, dict[str, Any], int | None, int | None]]:
        plan = current.plan
        schedule = next(s for s in self.template.function(plan.function_id).schedules if s.event_id == plan.event_id)
        execution_id = stable_uuid(plan.id_seed, plan.key, current.chain, current.attempt)
        event = render_input(
            schedule, Attempt(plan.scheduled_time, schedule_arn(schedule), current.attempt, execution_id)
        )
        if current.kind == KIND_CONCURRENT:
            return [(KIND_CONCURRENT, dict(event), None, None) for _ in range(plan.burst)]
        fault = plan.fail_after.get(current.attempt) if current.chain == KIND_TICK else None
        lost = plan.lose_answer if current.kind == KIND_TICK else None
        if current.kind == KIND_TICK and fault is None and lost is None and plan.burst > 1:
            # The copies arrive together with the first attempt. None of them is armed, so which
            # copy wins the claim cannot change the outcome and the run stays reproducible.
            copies = [(KIND_CONCURRENT, dict(event), None, None) for _ in range(plan.burst - 1)]
            return [(KIND_TICK, event, None, None), *copies]
        return [(current.kind, event, None if current.kind == KIND_REDELIVERY else fault, lost)]

    def _deliver_round(self, pool: ThreadPoolExecutor, current: _Round, index: int) -> list[DeliveryRecord]:
        self.clock.move_to(current.at, tick=False)
        plan = current.plan
        deliveries = self._events(current)
        with self.runtime.function_environment(plan.function_id):
            futures = [
                pool.submit(self._deliver_one, plan.function_id, event, fault, lost)
                for _, event, fault, lost in deliveries
            ]
            outcomes = [future.result() for future in futures]
        records = []
        for (kind, event, _, _), result in zip(deliveries, outcomes, strict=True):
            retried = result.outcome == OUTCOME_FAILED and self._retry(current)
            records.append(
                DeliveryRecord(
                    job=plan.job,
                    scheduled_time=format_scheduled_time(plan.scheduled_time),
                    at=format_scheduled_time(current.at),
                    round=index,
                    kind=kind,
                    attempt=current.attempt,
                    execution_id=str(event.get("execution_id", "")),
                    outcome=result.outcome,
                    error=result.error,
                    injected=result.injected,
                    writes_done=result.writes,
                    retried=retried,
                    responses_lost=result.responses_lost,
                )
            )
        return records

    def _retry(self, failed: _Round) -> bool:
        policy = failed.plan.retries
        if policy is None or failed.retry_number >= policy.max_retries:
            return False
        at = failed.at + RETRY_BACKOFF * 2**failed.retry_number
        if (at - failed.plan.scheduled_time).total_seconds() > policy.max_event_age_seconds:
            return False  # too old: the scheduler hands it to the dead-letter queue instead
        self._push(
            at,
            failed.plan,
            kind=KIND_RETRY,
            attempt=failed.attempt + 1,
            chain=failed.chain,
            retry_number=failed.retry_number + 1,
        )
        return True

    def _deliver_one(self, function_id: str, event: dict[str, Any], fault: int | None, lost: int | None) -> _Outcome:
        if fault is not None or lost is not None:
            self.faults.arm(fault, lost_answers=() if lost is None else (lost,))
        try:
            result = self.runtime.call(function_id, event)
            found = result.get("outcome") if isinstance(result, Mapping) else None
            outcome = _Outcome(found if found in SUPPRESSED else OUTCOME_EXECUTED)
        except InjectedFault as error:  # the delivery failed; the scheduler sees an error and retries
            outcome = _Outcome(
                OUTCOME_FAILED, f"{type(error).__name__}: {error}", injected=True, writes=error.writes_done
            )
        except Exception as error:  # the job's own failure, treated the same way
            outcome = _Outcome(OUTCOME_FAILED, f"{type(error).__name__}: {error}")
        finally:
            responses_lost = self.faults.lost_answers()
            self.faults.disarm()
        return replace(outcome, responses_lost=responses_lost)


@dataclass(frozen=True)
class _Outcome:
    outcome: str
    error: str | None = None
    injected: bool = False
    writes: int = 0
    responses_lost: int = 0


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
