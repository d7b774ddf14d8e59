"""How ticks reach a function in the simulator: the engine that carries out the plans
(`clockless_tools.simulate.plan`) in simulated time, and drains the fanned-out ticks' workers
(`clockless_tools.simulate.workers`) after each round.

A tick is delivered at least once, the way production does it: the scheduler fires within its
minute; Lambda may hand the same event over twice; several copies may arrive at once; a failed
attempt is retried with the attempt number raised and a new execution id (as Scheduler renders its
own retries: the harder case for a dedupe key); and a delivery may arrive after the job's next
tick. The engine is reactive like Lambda: a delivery that fails is retried (within the function's
`EventInvokeConfig`, the event's age counted from its first arrival) because it failed, not because
a plan said so.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from clockless import OUTCOME_DUPLICATE, OUTCOME_EXECUTED, OUTCOME_IN_PROGRESS, format_scheduled_time
from clockless.overlap import OUTCOME_BUFFERED, OUTCOME_SKIPPED
from clockless_tools.local.poller import OUTCOME_DONE
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.simulate.faults import FaultInjector, InjectedFault
from clockless_tools.simulate.plan import MAX_BURST, RETRY_BACKOFF, TickPlan
from clockless_tools.simulate.slow_night import HELD_OUTCOMES
from clockless_tools.simulate.workers import WorkerDriver, WorkerRecord
from clockless_tools.template.events import Attempt, render_input, schedule_arn, stable_uuid
from clockless_tools.template.model import Template

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
# How far past the moment a released message is received (see DeliveryEngine._drain).
RELEASE_STEP: Final = timedelta(milliseconds=1)


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
    # When Lambda first received this chain's event: its retries' age counts from here.
    received: datetime | None = field(compare=False, default=None)


class Clock(Protocol):
    def move_to(self, destination: datetime, tick: bool | None = None) -> None: ...


class DeliveryEngine:
    """Carries out plans in simulated time: moves the clock to each round, delivers its events
    (concurrently when there are several), and retries failures as Lambda would."""

    def __init__(
        self,
        template: Template,
        runtime: LocalLambdaRuntime,
        faults: FaultInjector,
        clock: Clock,
        *,
        progress: Callable[[int, int], None] = lambda _done, _queued: None,
        took_effect: Callable[[TickPlan, DeliveryRecord], None] = lambda _plan, _record: None,
        skipped: Callable[[TickPlan], None] = lambda _plan: None,
        workers: WorkerDriver | None = None,
    ) -> None:
        self.template = template
        self.runtime = runtime
        self.faults = faults
        self.clock = clock
        self.progress = progress
        self.took_effect = took_effect
        self.skipped = skipped
        # Ticks answered `buffered` (clockless.overlap), until a worker starts them: they take effect then.
        self._buffered: dict[str, TickPlan] = {}
        self._queue: list[_Round] = []
        self._sequence = 0
        self._rounds = 0
        self._effective: set[str] = set()
        # The fanned-out ticks' workers, drained after each round and when a message comes back.
        self.workers = workers if workers is not None and workers.active else None
        self.worker_records: list[WorkerRecord] = []

    def _push(
        self,
        at: datetime,
        plan: TickPlan,
        *,
        kind: str,
        attempt: int,
        chain: str,
        retry_number: int = 0,
        received: datetime | None = None,
    ) -> None:
        self._sequence += 1
        heapq.heappush(
            self._queue,
            _Round(at, plan.order, self._sequence, plan, kind, attempt, chain, retry_number, received or at),
        )

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
                records.extend(delivered)
                # Before the workers run: a tick buffered this round may start in their drain.
                for record in delivered:
                    if record.outcome in TOOK_EFFECT and current.plan.key not in self._effective:
                        self._effective.add(current.plan.key)
                        self.took_effect(current.plan, record)
                    elif record.outcome == OUTCOME_BUFFERED:
                        self._buffered.setdefault(current.plan.key, current.plan)
                    elif record.outcome == OUTCOME_SKIPPED and current.plan.key not in self._effective:
                        self._effective.add(current.plan.key)
                        self.skipped(current.plan)
                self._drain(current.at)
                self._rounds += 1
                self.progress(self._rounds, len(self._queue))
        return records

    def _wake(self) -> datetime | None:
        return None if self.workers is None else self.workers.next_wake()

    def _drain(self, at: datetime) -> None:
        if self.workers is not None:
            self.clock.move_to(at, tick=False)
            if self.workers.release_due():
                # A message made visible at a moment is received only after it on the simulated
                # server (moto's visibility is strict and time-machine holds the clock), so the workers
                # come a millisecond on; at the moment itself they would find nothing, and with no
                # later round to drain it the message was never seen again (docs/simulation.md).
                at += RELEASE_STEP
                self.clock.move_to(at, tick=False)
            drained = self.workers.drain(at)
            self.worker_records.extend(drained)
            for worker in drained:
                plan = self._buffered.get(worker.tick_key or "")
                if plan is not None and worker.outcome == OUTCOME_DONE and plan.key not in self._effective:
                    # Its start message handled: the buffered tick ran, in this round's place.
                    self._effective.add(plan.key)
                    record = DeliveryRecord(
                        plan.job, worker.scheduled_time or "", worker.at, self._rounds, "start", 1, "", OUTCOME_EXECUTED
                    )
                    self.took_effect(plan, record)

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
            futures = [pool.submit(self._deliver_one, plan, event, fault, lost) for _, event, fault, lost in deliveries]
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
        if (at - (failed.received or failed.at)).total_seconds() > policy.max_event_age_seconds:
            return False  # too old: Lambda hands it to the on-failure destination instead
        self._push(
            at,
            failed.plan,
            kind=KIND_RETRY,
            attempt=failed.attempt + 1,
            chain=failed.chain,
            retry_number=failed.retry_number + 1,
            received=failed.received,
        )
        return True

    def _deliver_one(self, plan: TickPlan, event: dict[str, Any], fault: int | None, lost: int | None) -> _Outcome:
        if fault is not None or lost is not None:
            self.faults.arm(fault, lost_answers=() if lost is None else (lost,), count_spared=plan.count_spared)
        try:
            result = self.runtime.call(plan.function_id, event)
            found = result.get("outcome") if isinstance(result, Mapping) else None
            outcome = _Outcome(found if found in SUPPRESSED | HELD_OUTCOMES else OUTCOME_EXECUTED)
        except Exception as error:  # the delivery failed; Lambda sees an error and retries
            # Powertools wraps a failed request to its own table in its own error: still ours.
            injected = injected_cause(error)
            outcome = _Outcome(
                OUTCOME_FAILED,
                f"{type(error).__name__}: {error}",
                injected=injected is not None,
                writes=0 if injected is None else injected.writes_done,
            )
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


def injected_cause(error: BaseException) -> InjectedFault | None:
    """The injected fault that caused `error` (itself, or one it was raised from), if any."""
    seen: BaseException | None = error
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        if isinstance(seen, InjectedFault):
            return seen
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return None
