"""A deploy in the middle of a tick: CloudFormation updates the coordinator and the workers one at a
time while the work queue keeps its messages, so a tick's coordinator runs one code and its
workers another, and the workers change code between two of the tick's messages
(docs/tick-contract.md#a-deploy-in-the-middle-of-a-tick).

For each fanned-out job of template.yaml (tests/jobs.py: one `clockless new job --fan-out` adds is
swept too), a clean tick on the jobs' demo data at the old code gives the reference: its tables,
its ledger summary and its number of deliveries N. Then the deploy lands at a boundary between
two of those deliveries (every one, for the cheapest job), in both orders:

- **workers first**: the coordinator fans the tick out with the old code; the workers run the old
  code until the boundary and the new one after it;
- **coordinator first**: the coordinator fans the tick out with the new code; the workers run the
  old code until the boundary, refusing by name what it cannot read (each refusal comes back as a
  failed receive does), and the new one after it.

Two changes are deployed: a message **version** (the new code writes version 2 and reads 1 and 2,
the old writes and reads 1: the compatibility rule of docs/fan-out.md#versions-a-deploy-in-the-middle-of-a-tick),
and a **raised shard count** (half the job's shards to all of them; the demo data are seeded as the
old count places them, each shard modulo the old count, so nothing is under a new shard before the
tick). Every case must end as the reference: the tables item by item, the ledger's summary (its
`partitions`: the count the coordinator fanned out into), the tick `succeeded`, the work queue and
its DLQ empty; a refusal only before the boundary, and none when the workers go first.

`make test` runs one boundary of the cheapest job (a version, the coordinator first); `slow` (CI)
runs both changes in both orders, at every boundary of the cheapest job and at the first, middle
and last boundary of each other job (CASES says why).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

import pytest
import time_machine
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout.messages import WorkMessage
from clockless_tools.local.dynamodb import patched_environ
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import Template
from tests.integration.test_fault_model import LAMBDA_RETRY_DELAYS, Tick
from tests.jobs import Job, fanned_out, jobs

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

VERSION: Final = "a message version"
SHARDS: Final = "a raised shard count"
WORKERS_FIRST: Final = "workers first"
COORDINATOR_FIRST: Final = "coordinator first"
FANNED_OUT: Final = [job for job in jobs() if job.worker_id is not None]


@dataclass(frozen=True)
class Code:
    """What one deployment of a job's functions reads, writes and runs."""

    reads: frozenset[int]
    writes: int
    partitions: tuple[str, ...]


@dataclass(frozen=True)
class Deploy:
    change: str
    order: str
    # The deliveries (counted from 0, the coordinator's first) the workers run before their update.
    boundary: int


def codes(change: str, shipped: tuple[str, ...]) -> tuple[Code, Code]:
    """The old code and the new for one change."""
    if change == VERSION:
        return Code(frozenset({1}), 1, shipped), Code(frozenset({1, 2}), 2, shipped)
    return Code(frozenset({1}), 1, shipped[: len(shipped) // 2]), Code(frozenset({1}), 1, shipped)


@dataclass
class Deployed:
    """One tick run while a deploy lands, and what its deliveries did."""

    tick: Tick
    clock: time_machine.Traveller
    old: Code
    new: Code
    deploy: Deploy | None = None
    ended: list[str] = field(default_factory=list)
    writing: list[int] = field(default_factory=lambda: [1])

    def __post_init__(self) -> None:
        work = self.tick.work
        assert work is not None
        self.worker_handler = self.tick.runtime.handler(work.worker)
        self.fan_out = self.worker_handler.clockless_worker  # type: ignore[attr-defined]
        self.runner = self.worker_handler.clockless_runner  # type: ignore[attr-defined]

    def _run_as(self, code: Code) -> None:
        self.fan_out.partitions = code.partitions
        self.fan_out.job.partitions_total = len(code.partitions)
        self.runner.partitions = code.partitions
        self.runner.versions = code.reads
        self.writing[0] = code.writes

    def run(self, event: dict[str, Any]) -> None:
        coordinator_first = self.deploy is not None and self.deploy.order == COORDINATOR_FIRST
        self._run_as(self.new if coordinator_first else self.old)
        function_id = self.tick.schedule.function_id
        request_id = str(uuid.uuid4())
        for attempt in range(1 + len(LAMBDA_RETRY_DELAYS)):
            context = self.tick.runtime.context(function_id)
            context.aws_request_id = request_id
            result = self.tick.runtime.handler(function_id)(dict(event), context)
            self.ended.append(str(result.get("outcome")))
            if result.get("outcome") in ("executed", "duplicate"):
                break
            self.clock.shift(LAMBDA_RETRY_DELAYS[min(attempt, len(LAMBDA_RETRY_DELAYS) - 1)])
        self._drain()

    def _drain(self) -> None:
        work = self.tick.work
        assert work is not None
        sqs, queue = work.client, work.url(work.queue)
        worker_timeout = timedelta(seconds=self.tick.template.function(work.worker).timeout)
        with (
            self.tick.runtime.function_environment(work.worker),
            patched_environ({"AWS_ENDPOINT_URL_SQS": self.tick.runtime.endpoint}),
        ):
            for _ in range(500):
                updated = self.deploy is not None and len(self.ended) >= self.deploy.boundary
                self._run_as(self.new if updated else self.old)
                received = sqs.receive_message(
                    QueueUrl=queue, MaxNumberOfMessages=1, VisibilityTimeout=1800, AttributeNames=["All"]
                ).get("Messages")
                if not received:
                    return
                (message,) = received
                try:
                    answer = self.tick.runtime.call(work.worker, work.event(message))
                except BatchProcessingError:  # its one record failed: Lambda leaves it to SQS
                    answer = {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
                if answer.get("batchItemFailures"):
                    self.ended.append("refused")
                    sqs.change_message_visibility(
                        QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                    )
                    self.clock.shift(worker_timeout + timedelta(seconds=11))
                else:
                    self.ended.append("ok")
                    sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
        raise AssertionError("the work queue did not drain")


@contextlib.contextmanager
def writing_version(deployed_writing: list[int], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every body written carries the version the code now running writes."""
    original = WorkMessage.body

    def body(self: WorkMessage) -> str:
        data = json.loads(original(self))
        data["version"] = deployed_writing[0]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    with monkeypatch.context() as patch:
        patch.setattr(WorkMessage, "body", body)
        yield


def reshard(tick: Tick, job: Job, old_count: int) -> None:
    """Each item of the job's tables under an index shard as the old count places it: the shard
    modulo the old count (the new count a multiple of it, so the same hash gives that shard)."""
    client = tick.client
    for table in job.tables:
        definition = tick.template.tables[table]
        attributes = {
            key["AttributeName"]
            for index in definition.get("GlobalSecondaryIndexes") or []
            for key in index["KeySchema"]
            if key["KeyType"] == "HASH"
        }
        described = client.describe_table(TableName=table)["Table"]
        key_names = [key["AttributeName"] for key in described["KeySchema"]]
        for item in _scan(client, table):
            for attribute in sorted(attributes):
                value = item.get(attribute, {}).get("S")
                if value is None or not value.isdigit() or int(value) < old_count:
                    continue
                client.update_item(
                    TableName=table,
                    Key={name: item[name] for name in key_names},
                    UpdateExpression="SET #shard = :shard",
                    ExpressionAttributeNames={"#shard": attribute},
                    ExpressionAttributeValues={":shard": {"S": str(int(value) % old_count)}},
                )


def _scan(client: Any, table: str) -> list[dict[str, Any]]:
    return [item for page in client.get_paginator("scan").paginate(TableName=table) for item in page["Items"]]


@dataclass(frozen=True)
class Reference:
    tables: dict[str, list[dict[str, Any]]]
    summary: dict[str, Any]
    deliveries: int


class World:
    """One job's tick, on the jobs' demo data seeded afresh for each run."""

    def __init__(self, template: Template, runtime: LocalLambdaRuntime, client: Any, job: Job, change: str) -> None:
        self.job = job
        self.change = change
        self.tick = Tick(template, runtime, template.jobs[job.name], client)
        self.event = dict(self.tick.event)

    @contextlib.contextmanager
    def fresh(self, clock: time_machine.Traveller, deploy: Deploy | None) -> Iterator[Deployed]:
        with self.tick.world(clock):
            shipped = tuple(self.tick.runtime.handler(self.tick.work.worker).clockless_runner.partitions)  # type: ignore[attr-defined]
            old, new = codes(self.change, shipped)
            if self.change == SHARDS:
                reshard(self.tick, self.job, len(old.partitions))
            deployed = Deployed(self.tick, clock, old, new, deploy)
            try:
                yield deployed
            finally:
                deployed._run_as(new)

    def summary(self) -> dict[str, Any]:
        entry = self.tick.ledger_entry()
        assert entry.get("status", {}).get("S") == "succeeded", f"{self.job.name}: {entry}"
        return dict(json.loads(entry["summary"]["S"]))


def reference_of(world: World, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch) -> Reference:
    with world.fresh(clock, None) as clean, writing_version(clean.writing, monkeypatch):
        clean.run(world.event)
        assert all(ended in ("executed", "ok") for ended in clean.ended), clean.ended
        return Reference(world.tick.domain_tables(), world.summary(), len(clean.ended))


def across(
    world: World, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch, reference: Reference, deploy: Deploy
) -> list[str]:
    """The tick run while `deploy` lands; what differs from the reference."""
    with world.fresh(clock, deploy) as run, writing_version(run.writing, monkeypatch):
        run.run(world.event)
        problems = []
        refused = [number for number, ended in enumerate(run.ended) if ended == "refused"]
        if deploy.order == WORKERS_FIRST and refused:
            problems.append(f"deliveries {refused} refused, though the workers went first")
        if any(number >= deploy.boundary for number in refused):
            problems.append(f"deliveries {refused} refused, some after the workers' update at {deploy.boundary}")
        if deploy.order == COORDINATOR_FIRST and deploy.boundary > 1 and not refused:
            problems.append("no delivery was refused before the workers' update")
        tables = world.tick.domain_tables()
        problems += [
            f"{table} differs from the reference: {len(tables[table])} vs {len(items)} items"
            for table, items in reference.tables.items()
            if tables[table] != items
        ]
        coordinator = run.new if deploy.order == COORDINATOR_FIRST else run.old
        expected = {**reference.summary, "partitions": len(coordinator.partitions)}
        summary = world.summary()
        if summary != expected:
            problems.append(f"ledger summary {summary}, expected {expected}")
        work = world.tick.work
        assert work is not None
        if work.bodies(work.queue) or work.bodies(work.dead_letter_queue):
            problems.append("messages left in the work queue or its DLQ")
        return problems


@pytest.fixture
def service(template: Template, runtime: LocalLambdaRuntime, tables: Any) -> tuple[Template, LocalLambdaRuntime, Any]:
    return template, runtime, tables


@contextlib.contextmanager
def job_world(
    template: Template, runtime: LocalLambdaRuntime, client: Any, job: Job, change: str
) -> Iterator[tuple[World, time_machine.Traveller]]:
    world = World(template, runtime, client, job, change)
    with (
        runtime.function_environment(world.tick.schedule.function_id),
        patched_environ({"AWS_ENDPOINT_URL_SQS": runtime.endpoint}),
        time_machine.travel(world.tick.time + timedelta(seconds=20), tick=False) as clock,
    ):
        yield world, clock


# The job whose tick costs least (fewest shards, so fewest worker deliveries): every boundary of its
# tick in CI, one in `make test`. A run costs a delivery per partition and the sweep a run per
# boundary, so a job's every boundary costs its shards squared (every boundary of both jobs, both
# changes and orders: 434 s of CPU, three quarters of it window generation's 32 shards); the other
# jobs meet the deploy at their first boundary (after the coordinator), the middle one and their
# last (before the delivery that finishes the tick).
CHEAPEST: Final = fanned_out()[0]
MIDDLE: Final = "the middle boundary"
EVERY: Final = "every boundary"
ENDS: Final = "first, middle and last boundary"
CASES: Final = [
    pytest.param(CHEAPEST, VERSION, COORDINATOR_FIRST, MIDDLE, id=f"{CHEAPEST.name}-{VERSION}-{COORDINATOR_FIRST}"),
    *(
        pytest.param(
            job,
            change,
            order,
            EVERY if job == CHEAPEST else ENDS,
            marks=pytest.mark.slow,
            id=f"{job.name}-{change}-{order}-{EVERY if job == CHEAPEST else ENDS}",
        )
        for job in FANNED_OUT
        for change in (VERSION, SHARDS)
        for order in (WORKERS_FIRST, COORDINATOR_FIRST)
    ),
]


def boundaries_of(deliveries: int, boundaries: str) -> list[int]:
    """The boundaries a case deploys at: between delivery b - 1 and b, for b in 1 .. deliveries - 1."""
    if boundaries == MIDDLE:
        return [deliveries // 2]
    if boundaries == ENDS:
        return sorted({1, deliveries // 2, deliveries - 1})
    return list(range(1, deliveries))


@pytest.mark.parametrize(("job", "change", "order", "boundaries"), CASES)
def test_a_deploy_at_every_message_boundary_of_a_tick_applies_every_item_once(  # noqa: PLR0917 - parametrized
    job: Job,
    change: str,
    order: str,
    boundaries: str,
    service: tuple[Template, LocalLambdaRuntime, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with job_world(*service, job, change) as (world, clock):
        reference = reference_of(world, clock, monkeypatch)
        assert reference.deliveries > 2, f"{job.name}: the tick had no worker deliveries to deploy between"
        failures = []
        for boundary in boundaries_of(reference.deliveries, boundaries):
            deploy = Deploy(change, order, boundary)
            failures += [
                f"{job.name} {order}, at {boundary}: {p}" for p in across(world, clock, monkeypatch, reference, deploy)
            ]
    assert not failures, "\n".join(failures)
