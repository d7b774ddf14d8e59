"""The workers of fanned-out ticks in simulated time: after each delivery round, and whenever a
message left in flight comes back (its queue's visibility timeout later), the template's SQS event
source mappings are drained into their functions (`clockless_tools.local.poller`), one
invocation at a time, meeting the faults SQS and DynamoDB hand a worker:

- `crash`: the invocation dies after its n-th request (Lambda's timeout, an out-of-memory kill):
  nothing after it runs, its message comes back after the visibility timeout;
- `lost_answer`: the answer to its n-th request is lost and botocore resends it;
- `throttled`: its n-th request is throttled as DynamoDB throttles it (a transaction cancelled
  with `ThrottlingError`, anything else until botocore's retries are spent); the kit waits it out;
- `duplicate`: SQS hands the same message to two invocations at once (at-least-once delivery).

A fault is chosen per message from its body and receive count (seeded), so a seed gives the same
faults whatever order messages come in; only a message's first receive meets one, so every
message is eventually handled before its queue's maxReceiveCount.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from clockless import format_scheduled_time
from clockless_tools.local.event_sources import SqsEventSource, worker_functions
from clockless_tools.local.poller import Invocation, Message, QueueDepth, SqsPoller
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.simulate.faults import FaultInjector, FaultKind
from clockless_tools.template.intrinsics import LocalNames

FAULT_CRASH: Final = "crash"
FAULT_LOST_ANSWER: Final = "lost_answer"
FAULT_THROTTLED: Final = "throttled"
FAULT_DUPLICATE: Final = "duplicate"
WORKER_FAULTS: Final = (FAULT_CRASH, FAULT_LOST_ANSWER, FAULT_THROTTLED, FAULT_DUPLICATE)
# A fault hits one of a worker's first requests (lease, read, first transactions, cursor).
MAX_FAULT_AT: Final = 6


@dataclass(frozen=True)
class WorkerRecord:
    """One worker invocation: its batch, what became of it, and what was injected. JSON-safe."""

    job: str | None
    scheduled_time: str | None
    at: str
    function_id: str
    queue: str
    messages: int
    # messages of the batch received before (their earlier invocation failed)
    redelivered: int
    outcome: str
    failed: int
    error: str | None = None
    fault: str | None = None
    fault_fired: bool = False
    responses_lost: int = 0
    # the outcome of the duplicate's second invocation ("done" or its error)
    copy_outcome: str | None = None

    @property
    def tick_key(self) -> str | None:
        return None if self.job is None else f"{self.job}@{self.scheduled_time}"


def _tick_of(message: Message) -> tuple[str | None, str | None]:
    """The tick a work message belongs to (docs/fan-out.md's messages name it), when it names one."""
    body = message.json()
    if isinstance(body, Mapping) and isinstance(body.get("job"), str) and isinstance(body.get("scheduled_time"), str):
        return body["job"], body["scheduled_time"]
    return None, None


@dataclass
class _Injected:
    fault: str
    fired: bool = False
    responses_lost: int = 0
    copy_outcome: str | None = None


class WorkerDriver:
    """Drains the template's SQS event source mappings in simulated time, injecting worker faults."""

    def __init__(
        self,
        runtime: LocalLambdaRuntime,
        endpoint: str,
        injector: FaultInjector,
        *,
        seed: str,
        names: LocalNames = LocalNames(),
    ) -> None:
        self.runtime = runtime
        self.injector = injector
        self.seed = seed
        # tick key -> chance that a message of that tick meets a fault on its first receive
        self.fault_rates: dict[str, float] = {}
        # A receive brings up to ten messages; their invocations run one at a time, so a fault armed
        # for every thread meets only the invocation it is meant for.
        self.poller = SqsPoller(
            runtime, endpoint, names, invoke=self._invoke, concurrency=10, parallel=False, held=self._held
        )
        self._injected: dict[str, _Injected] = {}
        # A slow night (clockless_tools.simulate.slow_night): mapping -> how long a waiting message
        # waits for a worker, and when the workers of a mapping holding messages come.
        self.lags: dict[str, timedelta] = {}
        self._opens_at: dict[str, datetime] = {}
        self._present: set[str] = set()

    def slow_down(self, lags_by_job: Mapping[str, timedelta]) -> None:
        """The workers of each job lag by its lag: a message waits that long before they come."""
        template = self.runtime.template
        for job, lag in lags_by_job.items():
            workers = set(worker_functions(template, template.jobs[job].function_id))
            self.lags.update({s.logical_id: lag for s in self.poller.sources if s.function_id in workers})

    def _held(self, source: SqsEventSource) -> bool:
        return source.logical_id in self._opens_at

    def _lag(self, at: datetime) -> None:
        """A mapping whose queue gets a message while no worker is there gets its workers a lag
        later. Once come, they stay while the queue holds anything (a message back from a failed
        invocation finds them there), and leave when it is empty."""
        depths: dict[str, QueueDepth] | None = None
        for source in self.poller.sources:
            lag, mapping = self.lags.get(source.logical_id), source.logical_id
            if lag is None:
                continue
            opens = self._opens_at.get(mapping)
            if opens is not None:
                if at >= opens:
                    del self._opens_at[mapping]
                    self._present.add(mapping)
                continue
            depths = depths if depths is not None else self.poller.depth()
            depth = depths[source.queue.logical_id]
            if mapping in self._present:
                if depth.total:
                    continue
                self._present.discard(mapping)
            if depth.visible:
                self._opens_at[mapping] = at + lag

    @property
    def active(self) -> bool:
        return bool(self.poller.sources)

    def next_wake(self) -> datetime | None:
        """When a message left in flight is visible again (simulated time), if any."""
        moment = self.poller.next_visible_at()
        visible = None if moment is None else datetime.fromtimestamp(math.ceil(moment), UTC)
        if visible is not None and self.lags:
            # A message received more than 12 h after it was sent cannot be made visible early
            # (moto counts SQS's 12-hour visibility limit from the send), so it comes back by its own
            # timeout, which moto ends strictly after the moment: a second later.
            visible += timedelta(seconds=1)
        return min((m for m in (visible, *self._opens_at.values()) if m is not None), default=None)

    def release_due(self) -> int:
        """Messages whose visibility timeout has passed on the simulated clock, made visible."""
        return self.poller.release_due()

    def drain(self, at: datetime) -> list[WorkerRecord]:
        """Every message visible at `at` (the clock stands there), and what its handling sends on."""
        if self.lags:
            self._lag(at)
        self.poller.release_due()
        return [self._record(invocation, at) for invocation in self.poller.drain()]

    def choose(self, messages: Sequence[Message]) -> tuple[str, int] | None:
        """The fault a batch meets and at which of its requests: decided by its first message's
        body and receive count. A tick whose every message meets one (the showcase) meets it at
        the first request, so it fires whatever the worker sends."""
        first = messages[0]
        job, scheduled_time = _tick_of(first)
        rate = self.fault_rates.get(f"{job}@{scheduled_time}", 0.0)
        if rate <= 0 or first.receive_count > 1:
            return None
        digest = hashlib.sha256(first.body.encode()).hexdigest()
        rng = random.Random(f"{self.seed}/{digest}")  # noqa: S311 - reproducible, not secret
        if rng.random() >= rate:
            return None
        return rng.choice(WORKER_FAULTS), 1 if rate >= 1 else rng.randint(1, MAX_FAULT_AT)

    def _invoke(self, function_id: str, event: dict[str, Any], messages: Sequence[Message]) -> tuple[Any, Any]:
        chosen = self.choose(messages)
        if chosen is None:
            return self.runtime.call(function_id, event), None
        fault, at = chosen
        injected = self._injected[messages[0].message_id] = _Injected(fault)
        if fault == FAULT_DUPLICATE:
            with ThreadPoolExecutor(max_workers=2) as pool:
                first, copy = (pool.submit(self.runtime.call, function_id, event) for _ in range(2))
                try:
                    copy.result()
                    injected.copy_outcome = "done"
                except Exception as error:  # the copy's failure is reported, the first's answer counts
                    injected.copy_outcome = f"{type(error).__name__}: {error}"
                injected.fired = True
                return first.result(), None
        if fault == FAULT_LOST_ANSWER:
            self.injector.arm(None, lost_answers=(at,), every_thread=True)
        else:
            kind = FaultKind.DIES_AFTER if fault == FAULT_CRASH else FaultKind.TRANSACTION_THROTTLED
            self.injector.arm(at, kind, count_spared=True, every_thread=True)
        try:
            return self.runtime.call(function_id, event), None
        finally:
            injected.responses_lost = self.injector.lost_answers()
            injected.fired = self.injector.disarm()

    def _record(self, invocation: Invocation, at: datetime) -> WorkerRecord:
        job, scheduled_time = _tick_of(invocation.messages[0])
        injected = self._injected.pop(invocation.messages[0].message_id, None)
        return WorkerRecord(
            job=job,
            scheduled_time=scheduled_time,
            at=format_scheduled_time(at),
            function_id=invocation.function_id,
            queue=invocation.queue,
            messages=len(invocation.messages),
            redelivered=sum(1 for m in invocation.messages if m.receive_count > 1),
            outcome=invocation.outcome,
            failed=len(invocation.failed),
            error=invocation.error,
            fault=None if injected is None else injected.fault,
            fault_fired=injected is not None and injected.fired,
            responses_lost=0 if injected is None else injected.responses_lost,
            copy_outcome=None if injected is None else injected.copy_outcome,
        )
