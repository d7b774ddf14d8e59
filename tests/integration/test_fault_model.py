"""The fault model, exhaustively: every request of a first delivery of every scheduled job in
template.yaml meets each kind of fault, then Lambda retries the way it does, and the tick must
end as one clean delivery leaves it.

Both jobs fan out: a delivery is the coordinator (claim, partition messages, completion), and
the tick is done when the job's workers have run its partitions. So after the deliveries the
work queue is drained through the worker (without faults: the workers' own faults are the kit's
fault-model test, `test_fanout_*`, and `clockless simulate`'s), and the tick is judged then: a
partition message lost, or sent twice by a resend or a retry, must change nothing.

For each (job, kind): one clean delivery on freshly seeded tables gives the reference (its domain
tables, its request count N); then, for each request index 1..N, the same tables are seeded
again, the first delivery meets the fault at that request, and Lambda's asynchronous retries
follow in simulated time (an error: retried after 1 minute, then 2 more; a timeout: retried 1
minute after the attempt's timeout). Asserted per index:

- the domain tables equal the reference, item by item;
- the tick's last delivery succeeded and none returned "in progress" (nothing else was live);
- the ledger says succeeded (its workers' finisher), with `attempts` the number of deliveries
  that claimed the tick, and the summary of the whole tick;
- a later redelivery is a duplicate and costs one request.

`make test` sweeps one job (the kit's coordinator is every job's path) at one request per code path
(`tests/fault_sweep.py`); the tests marked slow, which CI runs, sweep every job at every request.

The same holds when the fault hits Lambda's retry of a failed first attempt instead, at the kit's
requests that only a retry makes or that end it (its two claim transactions, its completion).
"""

from __future__ import annotations

import contextlib
import functools
import random
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import pytest
import time_machine

from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.dynamodb import patched_environ, table_definition
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.simulate.faults import AttemptDied, FaultInjector, FaultKind, RequestRecord
from clockless_tools.template.events import Attempt, render_input, schedule_arn
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Schedule, Template
from session_cleanup.demo import LEAD, plan_sessions
from session_cleanup.repository import DynamoSessionStore
from tests.fault_sweep import SWEEPS, aimed_at, kinds
from tests.integration.conftest import scan_all
from tests.integration.work_queues import WorkQueues
from tests.jobs import fanned_out
from tests.moto_backends import FreshBackends
from window_generation.demo import plan_programs
from window_generation.repository import DynamoProgramStore

# A night and an hour whose ticks find work: overdue programs, sessions past their grace.
FROM: Final = datetime(2026, 11, 28, 0, 0, tzinfo=UTC)
SEED: Final = 11
# The two jobs' own demo data, kept small: each request index of a tick is one run here.
PROGRAMS_PER_TENANT: Final = 4
SESSIONS_PER_TENANT: Final = 5
DEMO_TABLES: Final = ("ProgramsTable", "WindowsTable", "SessionsTable")


def seed_small(business_date: date, now: datetime) -> None:
    """A few programs (some due) and sessions (some past their grace) from the jobs' demo modules."""
    active, ended = plan_programs(1, random.Random(SEED), business_date=business_date, per_tenant=PROGRAMS_PER_TENANT)
    sessions, in_use = plan_sessions(
        1, random.Random(SEED), start=now - timedelta(hours=8) + LEAD, end=now, per_tenant=SESSIONS_PER_TENANT
    )
    programs_table, windows_table, sessions_table = DEMO_TABLES
    programs = DynamoProgramStore(programs_table, windows_table)
    programs.save_programs(active, active=True)
    programs.save_programs(ended, active=False)
    store = DynamoSessionStore(sessions_table)
    store.start_sessions(sessions)
    for tenant_id, session_id in sorted(in_use):
        store.log_exercise(tenant_id, session_id)


# Per job: its tables and work queues just seeded (the seed is the module's, the day the job's tick).
_seeded: dict[str, FreshBackends] = {}
LAMBDA_RETRY_DELAYS: Final = (timedelta(minutes=1), timedelta(minutes=2))
BOOKKEEPING: Final = ("idempotency", "ledger")
# The ledger's `summary_scope`, as stored (clockless.ledger spells it for the code): a fanned-out
# tick's summary is its workers' count of every item, set by the finisher.
WHOLE_TICK: Final = "tick"


@dataclass
class Outcome:
    """How one Lambda attempt ended: its result's outcome, or `raised` / `timed out`."""

    ended: str
    at: datetime


@dataclass
class Run:
    attempts: list[Outcome] = field(default_factory=list)
    # the requests of each attempt
    requests: list[list[RequestRecord]] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].ended in ("executed", "duplicate")


class Tick:
    """One tick of one scheduled job, delivered like Lambda delivers an asynchronous event."""

    def __init__(self, template: Template, runtime: LocalLambdaRuntime, schedule: Schedule, client: Any) -> None:
        self.template = template
        self.work = WorkQueues.of_job(runtime, template, schedule.job)
        self.runtime = runtime
        self.schedule = schedule
        self.client = client
        self.time = schedule.spec(template).ticks_between(FROM, FROM + timedelta(days=1))[0]
        self.event = render_input(
            schedule, Attempt(self.time, schedule_arn(schedule), 1, str(uuid.uuid5(uuid.NAMESPACE_URL, "fault")))
        )
        config = template.function(schedule.function_id).event_invoke_config
        self.max_retries = int(config.get("MaximumRetryAttempts", 2))
        self.timeout = timedelta(seconds=template.function(schedule.function_id).timeout)

    def reset(self) -> None:
        """Fresh tables and work queues, seeded the same way every time: through the repositories
        once per job, then the tables and queues as they were then, copied back into moto's
        backends (tests/moto_backends.py) without a request."""
        seeded = _seeded.get(self.schedule_job)
        if seeded is None:
            names = []
            for logical_id, properties in self.template.tables.items():
                definition = table_definition(logical_id, properties, LocalNames())
                with contextlib.suppress(self.client.exceptions.ResourceNotFoundException):
                    self.client.delete_table(TableName=definition["TableName"])
                self.client.create_table(**definition)
                names.append(definition["TableName"])
            self.work.delete()
            self.work = WorkQueues(self.runtime, self.work.worker, self.work.queue, self.work.dead_letter_queue)
            seed_small(self.time.date(), self.time)
            seeded = _seeded[self.schedule_job] = FreshBackends.of(
                names, [self.work.queue, self.work.dead_letter_queue]
            )
        else:
            seeded.install()
            self.work.answers.clear()

    @contextlib.contextmanager
    def world(self, clock: time_machine.Traveller) -> Iterator[FaultInjector]:
        """One run's world: the tables and queues as seeded, the clock at the tick, and the faults
        its requests meet. A new injector each time: DynamoDB's memory of the transactions'
        ClientRequestTokens (which the injector keeps) belongs to one world, or a run would find
        the workers' identical transactions of the run before already applied."""
        self.reset()
        clock.move_to(self.time + timedelta(seconds=20))
        with FaultInjector().installed() as faults:
            yield faults

    def deliver(self, clock: time_machine.Traveller, faults: FaultInjector, arms: Sequence[Callable[[], None]]) -> Run:
        """The event handed to the function, and Lambda's retries of it: same event, same request
        id, after 1 then 2 minutes, or 1 minute after the attempt's timeout. `arms[n]` arms the
        faults of attempt n (every attempt is watched). Then the workers run what was sent."""
        run = Run()
        request_id = str(uuid.uuid4())
        for attempt in range(1 + self.max_retries):
            (arms[attempt] if attempt < len(arms) else faults.watch)()
            context = self.runtime.context(self.schedule.function_id)
            context.aws_request_id = request_id
            started = datetime.now(UTC)
            try:
                result = self.runtime.handler(self.schedule.function_id)(dict(self.event), context)
                run.attempts.append(Outcome(str(result["outcome"]), started))
                break
            except AttemptDied:
                run.attempts.append(Outcome("timed out", started))
                clock.move_to(started + self.timeout)
            except Exception:
                run.attempts.append(Outcome("raised", started))
            finally:
                run.requests.append(faults.requests())
                faults.disarm()
            if attempt < self.max_retries:
                clock.shift(LAMBDA_RETRY_DELAYS[min(attempt, len(LAMBDA_RETRY_DELAYS) - 1)])
        self.run_workers()
        return run

    def run_workers(self) -> None:
        """The workers run what the deliveries handed them (the event source mapping, no faults)."""
        with (
            self.runtime.function_environment(self.work.worker),
            patched_environ({"AWS_ENDPOINT_URL_SQS": self.runtime.endpoint}),
        ):
            self.work.drain()

    def domain_tables(self) -> dict[str, list[dict[str, Any]]]:
        bookkeeping = set(self.template.tables_of_kind(*BOOKKEEPING))
        return {
            table: sorted(scan_all(self.client, table), key=repr)
            for table in sorted(self.template.tables.keys() - bookkeeping)
        }

    def ledger_entry(self) -> dict[str, Any]:
        (ledger_table,) = self.template.tables_of_kind("ledger")
        key = {"job": {"S": self.schedule_job}, "scheduled_time": {"S": self.event["scheduled_time"]}}
        return dict(self.client.get_item(TableName=ledger_table, Key=key).get("Item") or {})

    @property
    def schedule_job(self) -> str:
        return str(self.event["job"])


@pytest.fixture
def lambda_service(runtime: LocalLambdaRuntime, tables: Any) -> tuple[LocalLambdaRuntime, Any]:
    """The functions and their tables (each run's faults come with its world, `Tick.world`)."""
    return runtime, tables


def _applied(kind: FaultKind) -> bool:
    """Whether a request that met this fault took effect in DynamoDB (if it could)."""
    return kind not in (FaultKind.REFUSED, FaultKind.THROTTLED)


def _completed(index: int, last: int, kind: FaultKind) -> bool:
    """Whether the attempt that met the fault at request `index` completed the tick: a lost answer
    is recovered by the resend; an applied completion is the tick done, whatever its sender heard."""
    return kind is FaultKind.LOST_RESPONSE or (
        index == last and kind in (FaultKind.LOST_THEN_THROTTLED, FaultKind.DIES_AFTER)
    )


def _waited_out(kind: FaultKind, operation: str) -> bool:
    """A throttle on the kit's own DynamoDB transaction is waited out within the attempt's budget
    (and a resend of an applied one is answered from its token), and so is a throttled
    SendMessageBatch of the coordinator's (SQS's RequestThrottled; a message sent twice is a
    duplicate the workers absorb): the attempt goes on."""
    waited = ("TransactWriteItems", "SendMessageBatch")
    return kind in (FaultKind.THROTTLED, FaultKind.LOST_THEN_THROTTLED) and operation in waited


@dataclass(frozen=True)
class Expected:
    """What the ledger must say: deliveries that claimed the tick, and the summary's scope."""

    attempts: int
    scope: str


@dataclass(frozen=True)
class Aim:
    """Where the fault under test goes: the attempt (0 = the first) and its request (1 = the first)."""

    attempt: int
    request: int
    kind: FaultKind


def _check(tick: Tick, run: Run, reference: Reference, aim: Aim, expected: Expected) -> list[str]:
    problems = []
    hit = run.requests[aim.attempt] if aim.attempt < len(run.requests) else []
    if len(hit) < aim.request or hit[aim.request - 1].fault is not aim.kind:
        problems.append(f"the {aim.kind} fault did not fire at request {aim.request}: {hit}")
    if not run.succeeded:
        problems.append(f"no delivery succeeded: {[a.ended for a in run.attempts]}")
    if any(a.ended == "duplicate_in_progress" for a in run.attempts):
        problems.append(f"a delivery returned 'in progress' with nothing else live: {[a.ended for a in run.attempts]}")
    tables = tick.domain_tables()
    for table, items in reference.tables.items():
        if tables[table] != items:
            problems.append(f"{table} differs from one clean delivery: {len(tables[table])} vs {len(items)} items")
    entry = tick.ledger_entry()
    status = entry.get("status", {}).get("S")
    if status != "succeeded":
        problems.append(f"ledger status {status!r}, not 'succeeded'")
    if entry.get("attempts", {}).get("N") != str(expected.attempts):
        problems.append(f"ledger attempts {entry.get('attempts')}, expected {expected.attempts}")
    if entry.get("summary_scope", {}).get("S") != expected.scope:
        problems.append(f"ledger summary scope {entry.get('summary_scope')}, expected {expected.scope!r}")
    with count_requests() as redelivery:
        again = tick.runtime.handler(tick.schedule.function_id)(
            dict(tick.event), tick.runtime.context(tick.schedule.function_id)
        )
    if again["outcome"] != "duplicate" or redelivery.total != 1:
        problems.append(f"a later redelivery: {again['outcome']}, {dict(redelivery.operations)}")
    return problems


@dataclass(frozen=True)
class Reference:
    """One clean delivery: its domain tables, and the requests it made (where faults are aimed)."""

    tables: dict[str, list[dict[str, Any]]]
    requests: list[RequestRecord]


# Per job: the seed and the code are the same for every test of the module, so is the reference.
_references: dict[str, Reference] = {}


def _reference(tick: Tick, clock: time_machine.Traveller, template: Template) -> Reference:
    if tick.schedule_job not in _references:
        with tick.world(clock) as faults:
            clean = tick.deliver(clock, faults, [faults.watch])
        assert [a.ended for a in clean.attempts] == ["executed"]
        requests = clean.requests[0]
        # The first request is the claim, the last the completion; the partition messages lie
        # between (the coordinator reads and writes no domain table: its workers do).
        (idempotency,) = template.tables_of_kind("idempotency")
        assert idempotency in requests[0].tables
        assert idempotency in requests[-1].tables
        assert "SendMessageBatch" in {r.operation for r in requests}
        assert all(table in _bookkeeping_names(template) for r in requests for table in r.tables)
        _references[tick.schedule_job] = Reference(tick.domain_tables(), requests)
    return _references[tick.schedule_job]


# Every fanned-out job's delivery is the kit's coordinator (claim, partition messages, completion)
# with its own parameters: one job proves the path in `make test`, the one with the fewest partitions
# (a tick's cost is its partitions' runs); CI sweeps the others too (`slow`).
# A job without fan-out (the tick reaper, a plain `clockless new job`) has no coordinator: its
# delivery is the kit's claim and completion around its own logic, swept by test_tick_contract, the
# simulator (`count_spared`) and, for the reaper, test_fanout_dead_last_receive.
JOBS = [job.name for job in fanned_out()]
JOB_PATHS = [JOBS[0], *(pytest.param(job, marks=pytest.mark.slow) for job in JOBS[1:])]
# An attempt that dies has emitted no metric yet; Lambda would not even flush, the harness does.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


# The coordinator's own requests meet every kind in make test on the fan-out model's toy job
# (test_fanout_fault_model, a refused request among them); here, through the template's job and its
# workers, an attempt dying after one: the rest is CI's.
@pytest.mark.parametrize("sweep", SWEEPS)
@pytest.mark.parametrize("kind", kinds(FaultKind.DIES_AFTER), ids=str)
@pytest.mark.parametrize("job", JOB_PATHS)
def test_every_request_of_a_first_delivery_survives_every_fault(
    job: str, kind: FaultKind, sweep: str, template: Template, lambda_service: tuple[LocalLambdaRuntime, Any]
) -> None:
    runtime, tables = lambda_service
    schedule = template.jobs[job]
    tick = Tick(template, runtime, schedule, tables)
    with (
        runtime.function_environment(schedule.function_id),
        patched_environ({"AWS_ENDPOINT_URL_SQS": runtime.endpoint}),
        time_machine.travel(tick.time + timedelta(seconds=20), tick=False) as clock,
    ):
        reference = _reference(tick, clock, template)
        last = len(reference.requests)
        failures: dict[int, list[str]] = {}
        for index in aimed_at(reference.requests, sweep):
            with tick.world(clock) as faults:
                arm = functools.partial(faults.arm, index, kind, count_spared=True)
                run = tick.deliver(clock, faults, [arm])
                claimed = not (index == 1 and not _applied(kind))
                completed = _completed(index, last, kind)
                # The summary is the workers' count of the whole tick, whatever the coordinator's attempts.
                expected = Expected(int(claimed) + int(not completed), WHOLE_TICK)
                if _waited_out(kind, reference.requests[index - 1].operation):
                    expected = Expected(1, WHOLE_TICK)
                problems = _check(tick, run, reference, Aim(0, index, kind), expected)
            if problems:
                operation = reference.requests[index - 1].operation
                failures[index] = [f"request {index} ({operation}): {p}" for p in problems]

    assert not failures, "\n".join(line for lines in failures.values() for line in lines)


# The retry's claim over a failed attempt: an answer lost (the resend finds its own claim) in make
# test; the rest is CI's (a throttle on the kit's transactions is waited out in make test by the
# fan-out model's coordinator and continuation tests).
@pytest.mark.parametrize("kind", kinds(FaultKind.LOST_RESPONSE), ids=str)
@pytest.mark.parametrize("job", JOB_PATHS)
def test_the_retry_after_a_failed_attempt_survives_every_fault_to_its_bookkeeping(
    job: str, kind: FaultKind, template: Template, lambda_service: tuple[LocalLambdaRuntime, Any]
) -> None:
    """The first attempt fails in the job (after claiming), so Lambda's retry claims a tick that
    has a ledger entry (two claim transactions) and completes it: each of those requests meets
    the fault, and Lambda's third attempt follows if the retry fails."""
    runtime, tables = lambda_service
    schedule = template.jobs[job]
    tick = Tick(template, runtime, schedule, tables)
    with (
        runtime.function_environment(schedule.function_id),
        patched_environ({"AWS_ENDPOINT_URL_SQS": runtime.endpoint}),
        time_machine.travel(tick.time + timedelta(seconds=20), tick=False) as clock,
    ):
        reference = _reference(tick, clock, template)
        with tick.world(clock) as faults:
            # The job's first request fails (after the claim): a claimed, failed first attempt.
            clean_retry = tick.deliver(clock, faults, [_job_fails(faults), faults.watch])
        assert [a.ended for a in clean_retry.attempts] == ["raised", "executed"]
        retry = clean_retry.requests[1]
        last = len(retry)
        failures: dict[int, list[str]] = {}
        for index in (1, 2, last):  # the claim learning of the first attempt, the claim, the completion
            with tick.world(clock) as faults:
                run = tick.deliver(
                    clock, faults, [_job_fails(faults), functools.partial(faults.arm, index, kind, count_spared=True)]
                )
                # The first claim transaction is cancelled (the ledger has an entry): only a lost
                # answer lets the retry go on to claim. The second is the claim itself.
                claimed = kind is FaultKind.LOST_RESPONSE if index == 1 else (index != 2 or _applied(kind))
                completed = _completed(index, last, kind)
                expected = Expected(1 + int(claimed) + int(not completed), WHOLE_TICK)
                if _waited_out(kind, retry[index - 1].operation):
                    expected = Expected(2, WHOLE_TICK)
                problems = _check(tick, run, reference, Aim(1, index, kind), expected)
            if problems:
                failures[index] = [f"retry's request {index} ({retry[index - 1].operation}): {p}" for p in problems]

    assert not failures, "\n".join(line for lines in failures.values() for line in lines)


def _job_fails(faults: FaultInjector) -> Callable[[], None]:
    """The attempt fails right after its second request (the first partition messages sent)."""
    return functools.partial(faults.arm, 2, FaultKind.ERROR_AFTER, count_spared=True)


def _bookkeeping_names(template: Template) -> set[str]:
    return set(template.tables_of_kind(*BOOKKEEPING))


def test_the_seeded_ticks_find_work(template: Template) -> None:
    """Without work, a fault could only ever hit the kit's own requests."""
    business_date = date(2026, 11, 28)
    active, _ = plan_programs(1, random.Random(SEED), business_date=business_date, per_tenant=PROGRAMS_PER_TENANT)
    sessions, in_use = plan_sessions(
        1, random.Random(SEED), start=FROM - timedelta(hours=8) + LEAD, end=FROM, per_tenant=SESSIONS_PER_TENANT
    )
    assert any(program.current_window_end <= business_date for program in active)
    assert len(sessions) > len(in_use)
