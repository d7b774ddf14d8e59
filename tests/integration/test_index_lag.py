"""Index reads that lag: every Query page of every job's tick meets a global secondary index that
is behind its table (GSI reads are eventually consistent only), and the tick must still take
effect once (docs/tick-contract.md#index-reads-lag).

For each fanned-out job of template.yaml (tests/jobs.py: one `clockless new job --fan-out` adds is
swept too), one clean tick on the jobs' demo data gives the reference: its tables and its ledger
summary, and the deliveries' requests, among them every Query of an index (one per page). Then,
for each page:

- **stale rows**: the delivery that read the page dies right after the page's writes took effect,
  before its cursor is stored, so its redelivery reads the page again, through an index that still
  shows the rows just applied. They must cost nothing: the tables equal the reference item by item,
  the ledger's `applied` count equals the reference's, and each stale row is counted already done.
- **a row not yet visible**: the page lacks its first row (written a moment before the read). That
  is a row written just after the tick, so the reference is the clean run with that row taken out
  before the tick and put back after it: the tick's summary and, after the next tick, the tables
  must equal that reference's, item by item (what a row written within the lag gets is then the
  job's own answer to a late write: the docs say it per job).

Every tick ends `succeeded`, with no message left in the work queue or its DLQ. `make test` runs
one page of one job for each kind; the sweep over every page of every job is `slow` (CI).
"""

from __future__ import annotations

import contextlib
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import pytest
import time_machine

from clockless_tools.local.dynamodb import patched_environ
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.simulate.faults import AttemptDied, FaultInjector, FaultKind, RequestRecord
from clockless_tools.simulate.snapshot import Snapshot, dump_tables, load_tables
from clockless_tools.template.events import Attempt, render_input, schedule_arn
from clockless_tools.template.model import Template
from session_cleanup.demo import LEAD, plan_sessions
from session_cleanup.repository import DynamoSessionStore
from tests.index_keys import at_own_counts
from tests.integration.test_fault_model import (
    DEMO_TABLES,
    LAMBDA_RETRY_DELAYS,
    PROGRAMS_PER_TENANT,
    SEED,
    SESSIONS_PER_TENANT,
    Tick,
)
from tests.jobs import fanned_out, jobs
from window_generation.demo import plan_programs
from window_generation.repository import DynamoProgramStore

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

# Small pages, so a shard's rows come in several pages and the sweep meets page boundaries.
PAGE_SIZE: Final = 1
STALE: Final = "stale rows"
NOT_VISIBLE: Final = "a row not yet visible"
TENANTS: Final = 3
FIRST_TENANT: Final = "tenant-01"


@dataclass
class Delivery:
    """One handler invocation: the scheduled function's attempt, or a worker's receive of a message."""

    function_id: str
    message: str | None  # the work message's body (None: the tick itself)
    ended: str
    requests: list[RequestRecord] = field(default_factory=list)


@dataclass(frozen=True)
class Aim:
    """A delivery's fault: at its `request` (1-based, every request counted), and index lags at
    its n-th index Query."""

    request: int | None = None
    kind: FaultKind = FaultKind.DIES_AFTER
    index_reads: dict[int, FaultKind] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    """One Query of an index: the delivery that made it (0-based) and its request (1-based)."""

    delivery: int
    request: int
    # which of the delivery's index Queries it is (1-based)
    read: int
    # the request number of the page's writes in that delivery (None: the page found nothing to write)
    writes: int | None


@dataclass
class Lagged:
    """One tick run through deliveries that may meet a fault, and what it left."""

    tick: Tick
    clock: time_machine.Traveller
    faults: FaultInjector
    deliveries: list[Delivery] = field(default_factory=list)

    def run(self, event: dict[str, Any], aims: dict[int, Aim] | None = None) -> None:
        """The tick to its function (Lambda's retries after a failure), then the work queue drained
        as SQS shows its messages (a failed receive shown again once the dead run's lease is out).
        `aims[n]`: the n-th delivery (counted from 0 over this world) meets a fault at a request."""
        aims = aims or {}
        function_id = self.tick.schedule.function_id
        request_id = str(uuid.uuid4())
        for attempt in range(1 + len(LAMBDA_RETRY_DELAYS)):
            ended = self._invoke(function_id, None, aims, lambda: self._tick_call(function_id, event, request_id))
            if ended == "ok":
                break
            self.clock.shift(LAMBDA_RETRY_DELAYS[min(attempt, len(LAMBDA_RETRY_DELAYS) - 1)])
        if self.tick.work is not None:
            self._drain(aims)

    def _tick_call(self, function_id: str, event: dict[str, Any], request_id: str) -> None:
        context = self.tick.runtime.context(function_id)
        context.aws_request_id = request_id
        result = self.tick.runtime.handler(function_id)(dict(event), context)
        if result.get("outcome") not in ("executed", "duplicate"):
            raise AssertionError(f"tick ended {result.get('outcome')!r}")

    def _drain(self, aims: dict[int, Aim]) -> None:
        work = self.tick.work
        sqs, queue = work.client, work.url(work.queue)
        worker_timeout = timedelta(seconds=self.tick.template.function(work.worker).timeout)
        with (
            self.tick.runtime.function_environment(work.worker),
            patched_environ({"AWS_ENDPOINT_URL_SQS": self.tick.runtime.endpoint, "WORK_PAGE_SIZE": str(PAGE_SIZE)}),
        ):
            for _ in range(200):
                received = sqs.receive_message(
                    QueueUrl=queue, MaxNumberOfMessages=1, VisibilityTimeout=1800, AttributeNames=["All"]
                ).get("Messages")
                if not received:
                    return
                (message,) = received

                def call(message: dict[str, Any] = message) -> None:
                    answer = self.tick.runtime.call(work.worker, work.event(message))
                    if answer.get("batchItemFailures"):
                        raise AssertionError(f"reported failed: {answer}")

                if self._invoke(work.worker, message["Body"], aims, call) == "ok":
                    sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
                else:
                    # Shown again once the dead run's lease (its attempt's timeout) is out.
                    sqs.change_message_visibility(
                        QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                    )
                    self.clock.shift(worker_timeout + timedelta(seconds=11))
        raise AssertionError("the work queue did not drain")

    def _invoke(self, function_id: str, message: str | None, aims: dict[int, Aim], call: Any) -> str:
        number = len(self.deliveries)
        if number in aims:
            aim = aims[number]
            self.faults.arm(aim.request, aim.kind, count_spared=True, index_reads=aim.index_reads)
        else:
            self.faults.watch()
        try:
            call()
            ended = "ok"
        except AttemptDied:
            ended = "died"
        except Exception as error:  # the function failed: Lambda (or SQS) shows it again
            ended = f"raised {type(error).__name__}: {error}"
        finally:
            requests = self.faults.requests()
            self.faults.disarm()
        self.deliveries.append(Delivery(function_id, message, ended, requests))
        return ended


def index_pages(deliveries: list[Delivery], domain_tables: set[str]) -> list[Page]:
    """Every index Query of a run, with the request that wrote what its page found (the next domain
    transaction before the next read; None when the page found nothing to write)."""
    pages = []
    for number, delivery in enumerate(deliveries):
        reads = 0
        for position, request in enumerate(delivery.requests):
            if request.index_name is None:
                continue
            reads += 1
            writes = None
            for later in delivery.requests[position + 1 :]:
                if later.index_name is not None:
                    break
                if later.operation == "TransactWriteItems" and later.tables & domain_tables:
                    writes = later.index
                    break
            pages.append(Page(number, request.index, reads, writes))
    return pages


def ledger_summary(tick: Tick, event: dict[str, Any]) -> dict[str, Any]:
    (ledger_table,) = tick.template.tables_of_kind("ledger")
    key = {"job": {"S": event["job"]}, "scheduled_time": {"S": event["scheduled_time"]}}
    entry = tick.client.get_item(TableName=ledger_table, Key=key, ConsistentRead=True).get("Item") or {}
    assert entry.get("status", {}).get("S") == "succeeded", f"tick {event['scheduled_time']}: {entry}"
    return dict(json.loads(entry["summary"]["S"]))


def queues_empty(tick: Tick) -> bool:
    return tick.work is None or not (tick.work.bodies(tick.work.queue) or tick.work.bodies(tick.work.dead_letter_queue))


def seed_more(now: datetime) -> None:
    """Two more tenants' programs and sessions, from the jobs' demo modules (the fault model's
    seed is the first tenant's)."""
    rng = random.Random(SEED + 1)
    active, ended = plan_programs(TENANTS, rng, business_date=now.date(), per_tenant=PROGRAMS_PER_TENANT)
    sessions, in_use = plan_sessions(
        TENANTS, rng, start=now - timedelta(hours=8) + LEAD, end=now, per_tenant=SESSIONS_PER_TENANT
    )
    programs_table, windows_table, sessions_table = DEMO_TABLES
    programs = DynamoProgramStore(programs_table, windows_table)
    programs.save_programs([p for p in active if p.tenant_id != FIRST_TENANT], active=True)
    programs.save_programs([p for p in ended if p.tenant_id != FIRST_TENANT], active=False)
    store = DynamoSessionStore(sessions_table)
    store.start_sessions([s for s in sessions if s.tenant_id != FIRST_TENANT])
    for tenant_id, session_id in sorted(in_use):
        if tenant_id != FIRST_TENANT:
            store.log_exercise(tenant_id, session_id)


# Every job that reads its due items from an index (each fanned out: its workers do).
LAGGED_JOBS: Final = [job.name for job in jobs() if job.worker_id is not None]


class World:
    """One job's tick and the one after it, on the jobs' demo data seeded afresh for each run."""

    def __init__(self, template: Template, runtime: LocalLambdaRuntime, client: Any, job: str) -> None:
        self.tick = Tick(template, runtime, template.jobs[job], client)
        self.event = dict(self.tick.event)
        schedule = self.tick.schedule
        after = schedule.spec(template).ticks_between(
            self.tick.time + timedelta(seconds=1), self.tick.time + timedelta(days=2)
        )[0]
        self.next_event = render_input(
            schedule, Attempt(after, schedule_arn(schedule), 1, str(uuid.uuid5(uuid.NAMESPACE_URL, "next tick")))
        )
        self.next_time = after
        self.more: Snapshot | None = None

    @contextlib.contextmanager
    def fresh(self, clock: time_machine.Traveller) -> Iterator[Lagged]:
        """The tables as seeded (the fault model's demo data and more tenants, so some shards hold
        several due rows: several pages), the clock at the tick, a new injector."""
        with self.tick.world(clock) as faults:
            if self.more is None:
                seed_more(self.tick.time)
                self.more = dump_tables(self.tick.client, DEMO_TABLES)
            else:
                load_tables(self.tick.client, self.more)
            yield Lagged(self.tick, clock, faults)

    def domain_tables(self) -> dict[str, list[dict[str, Any]]]:
        return self.tick.domain_tables()

    def next_tick(self, lagged: Lagged) -> None:
        lagged.clock.move_to(self.next_time + timedelta(seconds=20))
        lagged.run(self.next_event)


@dataclass(frozen=True)
class Reference:
    tables: dict[str, list[dict[str, Any]]]
    summary: dict[str, Any]
    pages: list[Page]


def reference_of(world: World, clock: time_machine.Traveller) -> Reference:
    with world.fresh(clock) as clean:
        clean.run(world.event)
        assert all(d.ended == "ok" for d in clean.deliveries), [d.ended for d in clean.deliveries]
        tables = world.domain_tables()
        pages = index_pages(clean.deliveries, set(tables))
        return Reference(tables, ledger_summary(world.tick, world.event), pages)


def stale_rows(world: World, clock: time_machine.Traveller, reference: Reference, page: Page) -> list[str]:
    """The delivery that read `page` dies right after the page's writes took effect; its
    redelivery reads the page again through an index that still shows the rows just applied."""
    assert page.writes is not None
    with world.fresh(clock) as lagged:
        redelivery = _redelivery_of(page, reference)
        lagged.run(
            world.event,
            {
                page.delivery: Aim(page.writes, FaultKind.DIES_AFTER),
                # The redelivery reads from the partition's stored cursor, at most as many Queries as the
                # page's delivery made to reach the page (a page reads on into the next of its partition's
                # keys when one ends short, so the page's own Query need not be the first): the index
                # lags on each of them.
                redelivery: Aim(index_reads=dict.fromkeys(range(1, page.read + 1), FaultKind.STALE_ROWS)),
            },
        )
        problems = []
        died = lagged.deliveries[page.delivery]
        again = lagged.deliveries[redelivery] if redelivery < len(lagged.deliveries) else None
        if died.ended != "died" or again is None or again.message != died.message:
            problems.append(f"the page's delivery did not die and come back: {died.ended}, {again and again.ended}")
        shown = lagged.faults.counts.stale_rows_shown
        if not shown:
            problems.append("the re-read showed no stale row")
        problems += _same_tables(world.domain_tables(), reference.tables)
        summary = ledger_summary(world.tick, world.event)
        expected = {**reference.summary, "already_done": reference.summary["already_done"] + shown}
        expected["found"] = reference.summary["found"] + shown
        if summary != expected:
            problems.append(f"ledger summary {summary}, expected {expected} ({shown} stale row(s) already done)")
        if not queues_empty(world.tick):
            problems.append("messages left in the work queue or its DLQ")
        return problems


def _redelivery_of(page: Page, reference: Reference) -> int:
    """The message of the page's delivery is shown again right after it died: the next delivery."""
    return page.delivery + 1


def _same_tables(tables: dict[str, list[dict[str, Any]]], reference: dict[str, list[dict[str, Any]]]) -> list[str]:
    return [
        f"{table} differs from the reference: {len(tables[table])} vs {len(items)} items"
        for table, items in reference.items()
        if tables[table] != items
    ]


def not_yet_visible(world: World, clock: time_machine.Traveller, page: Page) -> list[str]:
    """The page lacks its first row, then the next tick runs; against the clean run in which that
    row is written just after the tick."""
    with world.fresh(clock) as lagged:
        lagged.run(world.event, {page.delivery: Aim(index_reads={page.read: FaultKind.NOT_YET_VISIBLE})})
        (hidden,) = lagged.faults.hidden_rows
        (table,) = lagged.deliveries[page.delivery].requests[page.request - 1].tables
        tick_summary = ledger_summary(world.tick, world.event)
        world.next_tick(lagged)
        tables, next_summary = world.domain_tables(), ledger_summary(world.tick, world.next_event)
        left = queues_empty(world.tick)
    with world.fresh(clock) as late:
        client = world.tick.client
        key_names = [k["AttributeName"] for k in client.describe_table(TableName=table)["Table"]["KeySchema"]]
        key = {name: hidden[name] for name in key_names}
        item = client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
        client.delete_item(TableName=table, Key=key)
        late.run(world.event)
        late_summary = ledger_summary(world.tick, world.event)
        client.put_item(TableName=table, Item=item)  # written just after the tick
        world.next_tick(late)
        problems = _same_tables(tables, world.domain_tables())
        if tick_summary != late_summary:
            problems.append(f"the tick's summary {tick_summary}, with the row written after it {late_summary}")
        late_next = ledger_summary(world.tick, world.next_event)
        if next_summary != late_next:
            problems.append(f"the next tick's summary {next_summary}, with the row written late {late_next}")
        if not left:
            problems.append("messages left in the work queue or its DLQ")
        return problems


@pytest.fixture
def service(template: Template, runtime: LocalLambdaRuntime, tables: Any) -> tuple[Template, LocalLambdaRuntime, Any]:
    """The template, its functions, and their tables (each run seeds its own: `World.fresh`)."""
    return template, runtime, tables


@contextlib.contextmanager
def job_world(template: Template, runtime: LocalLambdaRuntime, client: Any, job: str) -> Iterator[tuple[World, Any]]:
    world = World(template, runtime, client, job)
    with (
        runtime.function_environment(world.tick.schedule.function_id),
        patched_environ({"AWS_ENDPOINT_URL_SQS": runtime.endpoint}),
        time_machine.travel(world.tick.time + timedelta(seconds=20), tick=False) as clock,
    ):
        yield world, clock


# The job whose tick costs least (fewest shards, so fewest worker deliveries) for `make test`.
CHEAPEST: Final = fanned_out()[0].name
# `make test`: the cheapest job's first page that found rows meets a stale re-read (the kit's count of
# what a redelivery finds already done); CI: every page that found rows, of every job, each kind.
# A page that found no row has nothing a lag could show or hide.
CASES: Final = [
    pytest.param(CHEAPEST, STALE, "first page", id=f"{CHEAPEST}-{STALE}-first page"),
    *(
        pytest.param(job, kind, "every page", marks=pytest.mark.slow, id=f"{job}-{kind}-every page")
        for job in LAGGED_JOBS
        for kind in (STALE, NOT_VISIBLE)
    ),
]


@pytest.mark.parametrize(("job", "kind", "pages"), CASES)
def test_every_page_of_every_job_survives_an_index_that_lags(
    job: str, kind: str, pages: str, service: tuple[Template, LocalLambdaRuntime, Any]
) -> None:
    with job_world(*service, job) as (world, clock):
        reference = reference_of(world, clock)
        found = [page for page in reference.pages if page.writes is not None]
        assert found, f"{job}: no page of the seeded tick found a row to apply"
        failures = []
        for page in found[:1] if pages == "first page" else found:
            problems = (
                stale_rows(world, clock, reference, page) if kind == STALE else not_yet_visible(world, clock, page)
            )
            failures += [f"{job} delivery {page.delivery} page {page.read}: {p}" for p in problems]
    assert not failures, "\n".join(failures)


@pytest.fixture(autouse=True)
def own_index_keys(example_index_keys: dict[tuple[str, str], int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs' own index keys (not the integration tests' one per partition): a redelivery here
    resumes among a partition's many keys."""
    at_own_counts(example_index_keys, monkeypatch)
