"""The fault model on a fanned-out tick: every request of a worker's partition run meets each kind
of fault, then SQS redelivers the way it does, and the tick must end as one clean run leaves it.

A toy PartitionWork over the embedded server (two conditional actions per item, as window
generation has) and the real coordinator and worker. A clean run gives the reference: the toy's
tables, the tick's counters, and the requests of the run that finishes the tick (the last
partition's: lease, pages, transactions, cursors, done, finisher). Then, for each of those
requests and each kind, the tick runs again from fresh tables with that request faulted; a
delivery that fails (raises or dies) is shown again after the visibility timeout (30 minutes of
simulated time: a dead worker's lease has expired and DynamoDB has forgotten its tokens).
Judged item by item and by the ledger:

- the toy's tables equal the reference, item by item (nothing applied twice, nothing lost);
- the tick entry says succeeded, with every partition done and the reference's counters
  (found, applied, already done, failed: nothing counted twice or missed);
- no message is left in the work queue or its DLQ;
- TickSucceeded reached the logs (Powertools' EMF line on stdout, what CloudWatch reads) at least
  once and at most twice for the succeeded tick, whatever died where.

The partition holds an item found already done (its output exists, so it stays in the index):
a run that dies after counting it and before storing its cursor must not count it twice.

Also: every message delivered twice, the copies at once; transaction conflicts on every
transaction's first send; a partition throttled through every attempt of the batch writer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
import time_machine
from botocore.awsrequest import AWSResponse
from botocore.endpoint import Endpoint

from clockless.fanout.records import tick_key
from clockless_tools.simulate.faults import (
    MODEL_KINDS,
    AttemptDied,
    FaultInjector,
    FaultKind,
    RequestRecord,
    operation_of,
)
from tests.fault_sweep import SWEEPS, aimed_at
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    ITEMS_TABLE,
    OUTPUTS_TABLE,
    TOY_JOB,
    Context,
    FixedWork,
    ServedToy,
    create_tables,
    seed,
    served_toy,
    sqs_event,
    toy_job,
)

SCHEDULED: Final = f"{BUSINESS_DATE}T02:00:00Z"
TICK: Final = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}
# One partition of 5 items in pages of 3: two pages, so the run stores a cursor, and the run
# also finishes the tick (lease, 2 Query, 2 item transactions, a cursor, done, the finisher's
# GetItem, Query and UpdateItem). Several partitions are the unit tests' (tests/unit/kit/).
ITEMS: Final = 5
PARTITIONS: Final = 1
# Items in the index whose output exists already: every run that reads them finds them done.
ALREADY_DONE: Final = 1
# A duplicate TickSucceeded is harmless to the dead-man alarm; what a death can cost at most.
MAX_SUCCESS_METRICS: Final = 2
# The work queue's visibility timeout: 6 x the worker's 300 s timeout, as the template sets it.
VISIBILITY: Final = timedelta(minutes=30)
LAMBDA_RETRY_DELAYS: Final = (timedelta(minutes=1), timedelta(minutes=2))
COORDINATOR_TIMEOUT: Final = timedelta(seconds=120)
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@dataclass
class Delivery:
    partition: str
    kind: str
    ended: str
    requests: list[RequestRecord] = field(default_factory=list)
    hop: int = 0


@dataclass(frozen=True)
class Aim:
    """The fault under test: the first delivery of `partition`'s message meets `kind` at `request`
    (and `then` at later requests of the same delivery)."""

    partition: str
    request: int
    kind: FaultKind
    then: dict[int, FaultKind] = field(default_factory=dict)
    # the message of that partition aimed at: its first run (0) or a continuation
    hop: int = 0


class FannedOutTick:
    def __init__(
        self, toy: ServedToy, faults: FaultInjector, clock: time_machine.Traveller, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.toy = toy
        self.faults = faults
        self.clock = clock
        self.capsys = capsys
        _, self.work, self.coordinator, self.worker = toy_job(lambda: toy.dynamodb, partitions=PARTITIONS)
        # What each worker attempt has left of its timeout (below WORK_TIME_BUDGET_SECONDS, 30 s:
        # every run does one page and hands on a continuation).
        self.remaining_ms = 300_000

    def reset(self, *, poison: int = 0) -> None:
        # An hour later: the same tick on the same data sends the same transactions, and DynamoDB
        # (the injector) would answer them from their tokens for 10 minutes without applying them.
        self.clock.shift(timedelta(hours=1))
        for table in (ITEMS_TABLE, OUTPUTS_TABLE, "LedgerTable", "IdempotencyTable"):
            self.toy.dynamodb.delete_table(TableName=table)
        create_tables(self.toy.dynamodb)
        self.drain_queues()
        seed(self.toy.dynamodb, ITEMS, not_due=2, partitions=PARTITIONS, poison=poison, already_done=ALREADY_DONE)
        self.capsys.readouterr()  # the metrics printed from here on are this run's

    def drain_queues(self) -> None:
        for queue in (self.toy.work_queue, self.toy.dead_letter_queue):
            # (PurgeQueue: once a minute at most)
            while messages := self.toy.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
                for message in messages:
                    self.toy.sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])

    def start(self, aim: Aim | None = None) -> list[Delivery]:
        """The tick delivered to the coordinator, and Lambda's asynchronous retries of it (same
        request id; after 1 then 2 minutes, or a minute after a timeout) until one succeeds."""
        request_id = str(uuid.uuid4())
        attempts: list[Delivery] = []
        for attempt in range(1 + len(LAMBDA_RETRY_DELAYS)):
            if aim is not None and attempt == 0:
                self.faults.arm(aim.request, aim.kind, count_spared=True, then=aim.then)
            else:
                self.faults.watch()
            try:
                result = self.coordinator(dict(TICK), Context(aws_request_id=request_id))
                ended = str(result["outcome"])
            except AttemptDied:
                ended = "died"
                self.clock.shift(COORDINATOR_TIMEOUT)
            except Exception:
                ended = "raised"
            finally:
                requests = self.faults.requests()
                self.faults.disarm()
            attempts.append(Delivery("coordinator", "tick", ended, requests))
            if ended in ("executed", "duplicate"):
                return attempts
            self.clock.shift(LAMBDA_RETRY_DELAYS[min(attempt, len(LAMBDA_RETRY_DELAYS) - 1)])
        raise AssertionError(f"no coordinator attempt succeeded: {[a.ended for a in attempts]}")

    def run(self, aim: Aim | None = None, *, copies: int = 1, coordinator: Aim | None = None) -> list[Delivery]:
        """The coordinator, then Lambda's SQS poller until the queue is empty."""
        self.start(coordinator)
        return self.drain(aim, copies=copies)

    def drain(self, aim: Aim | None = None, *, copies: int = 1) -> list[Delivery]:
        deliveries: list[Delivery] = []
        aimed = False
        for _ in range(100):
            received = self.toy.sqs.receive_message(
                QueueUrl=self.toy.work_queue, MaxNumberOfMessages=1, VisibilityTimeout=int(VISIBILITY.total_seconds())
            ).get("Messages")
            if not received:
                return deliveries
            message = received[0]
            body = json.loads(message["Body"])
            target = (
                aim is not None and not aimed and body["partition"] == aim.partition and body.get("hop", 0) == aim.hop
            )
            if copies > 1:
                ended = self._deliver_copies(message, copies, deliveries, body)
            else:
                ended = self._deliver(message, deliveries, body, aim if target else None)
                aimed = aimed or target
            if ended == "ok":
                self.toy.sqs.delete_message(QueueUrl=self.toy.work_queue, ReceiptHandle=message["ReceiptHandle"])
            else:
                # Shown again after its visibility timeout (reported failed: at once, but the
                # frozen clock must move for SQS to show it).
                self.toy.sqs.change_message_visibility(
                    QueueUrl=self.toy.work_queue, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
                self.clock.shift(VISIBILITY)
        raise AssertionError(f"the work queue did not drain: {[(d.partition, d.ended) for d in deliveries]}")

    def _deliver(
        self, message: dict[str, Any], deliveries: list[Delivery], body: dict[str, Any], aim: Aim | None
    ) -> str:
        if aim is None:
            self.faults.watch()
        else:
            self.faults.arm(aim.request, aim.kind, count_spared=True, then=aim.then)
        try:
            response = self.worker(sqs_event([message]), Context(remaining_ms=self.remaining_ms))
            ended = "reported failed" if response["batchItemFailures"] else "ok"
        except AttemptDied:
            ended = "died"
        except Exception:
            ended = "raised"
        finally:
            requests = self.faults.requests()
            self.faults.disarm()
        deliveries.append(Delivery(body["partition"], body["kind"], ended, requests, body.get("hop", 0)))
        return ended

    def _deliver_copies(
        self, message: dict[str, Any], copies: int, deliveries: list[Delivery], body: dict[str, Any]
    ) -> str:
        """The same message handed to `copies` workers at once, as SQS may."""
        ended: list[str] = []

        def one() -> None:
            try:
                response = self.worker(sqs_event([message]), Context(remaining_ms=self.remaining_ms))
                ended.append("reported failed" if response["batchItemFailures"] else "ok")
            except Exception:
                ended.append("raised")

        threads = [threading.Thread(target=one) for _ in range(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        deliveries.extend(Delivery(body["partition"], body["kind"], e) for e in ended)
        return "ok" if "ok" in ended else "raised"

    def state(self) -> dict[str, Any]:
        tables = {
            table: sorted(
                (
                    item
                    for page in self.toy.dynamodb.get_paginator("scan").paginate(TableName=table)
                    for item in page["Items"]
                ),
                key=repr,
            )
            for table in (ITEMS_TABLE, OUTPUTS_TABLE)
        }
        entry = self.toy.dynamodb.get_item(
            TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED), ConsistentRead=True
        )
        item = entry.get("Item") or {}
        printed = self.capsys.readouterr().out
        return {
            "TickSucceeded": printed.count('"TickSucceeded":[1.0]'),
            "tables": tables,
            "status": item.get("status", {}).get("S"),
            "partitions": (item.get("partitions_done", {}).get("N"), item.get("partitions_total", {}).get("N")),
            "summary": json.loads(item["summary"]["S"]) if "summary" in item else None,
            "left in the work queue": self._count(self.toy.work_queue),
            "left in the work DLQ": self._count(self.toy.dead_letter_queue),
        }

    def _count(self, queue: str) -> int:
        attributes = self.toy.sqs.get_queue_attributes(
            QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


@dataclass(frozen=True)
class Reference:
    state: dict[str, Any]
    # the partition whose run finished the tick, and that run's requests
    last_partition: str
    last_requests: list[RequestRecord]


def _problems(state: dict[str, Any], reference: Reference) -> list[str]:
    problems = []
    for table, items in reference.state["tables"].items():
        if state["tables"][table] != items:
            problems.append(f"{table} differs from the clean run ({len(state['tables'][table])} vs {len(items)} items)")
    for key in ("status", "partitions", "summary", "left in the work queue", "left in the work DLQ"):
        if state[key] != reference.state[key]:
            problems.append(f"{key}: {state[key]!r}, the clean run: {reference.state[key]!r}")
    if state["status"] == "succeeded" and not 1 <= state["TickSucceeded"] <= MAX_SUCCESS_METRICS:
        problems.append(f"TickSucceeded emitted {state['TickSucceeded']} times for the succeeded tick")
    return problems


@pytest.fixture
def tick(
    dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[FannedOutTick]:
    # One lane: the injector arms a thread.
    with (
        served_toy(dynamodb_endpoint, monkeypatch, WORK_CONCURRENCY="1", WORK_PAGE_SIZE="3") as toy,
        time_machine.travel(datetime(2026, 12, 1, 2, 0, 20, tzinfo=UTC), tick=False) as clock,
    ):
        faults = FaultInjector()
        with faults.installed():
            yield FannedOutTick(toy, faults, clock, capsys)


# The seed and the code are the same for every test of the module, so is the clean run.
_references: list[Reference] = []


def _reference(tick: FannedOutTick) -> Reference:
    if not _references:
        _references.append(_clean_run(tick))
    return _references[0]


def _clean_run(tick: FannedOutTick) -> Reference:
    tick.reset()
    deliveries = tick.run()
    assert [d.ended for d in deliveries] == ["ok"] * PARTITIONS
    state = tick.state()
    assert state["status"] == "succeeded"
    assert state["summary"] == {
        "found": ITEMS + ALREADY_DONE,
        "applied": ITEMS,
        "already_done": ALREADY_DONE,
        "failed": 0,
        "partitions": PARTITIONS,
    }
    assert state["TickSucceeded"] == 1
    last = deliveries[-1]
    # the finisher, and its note that TickSucceeded was emitted
    assert [r.operation for r in last.requests][-4:] == ["GetItem", "Query", "UpdateItem", "UpdateItem"]
    return Reference(state, last.partition, last.requests)


@pytest.mark.parametrize("sweep", SWEEPS)
@pytest.mark.parametrize("kind", MODEL_KINDS, ids=str)
def test_every_request_of_a_partition_run_survives_every_fault(
    tick: FannedOutTick, kind: FaultKind, sweep: str
) -> None:
    """`make test`: one request per code path (a second page repeats the first's); CI: every request."""
    reference = _reference(tick)
    failures: list[str] = []
    for index in aimed_at(reference.last_requests, sweep):
        request = reference.last_requests[index - 1]
        tick.reset()
        deliveries = tick.run(Aim(reference.last_partition, index, kind))
        hit = next(d for d in deliveries if d.partition == reference.last_partition)
        if len(hit.requests) < index or hit.requests[index - 1].fault is not kind:
            failures.append(f"request {index} ({request.operation}): the fault did not fire: {hit.requests}")
        failures.extend(f"request {index} ({request.operation}): {p}" for p in _problems(tick.state(), reference))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", MODEL_KINDS, ids=str)
def test_every_request_of_the_coordinator_survives_every_fault(tick: FannedOutTick, kind: FaultKind) -> None:
    """Its claim (which records partitions_total), its SendMessageBatch, its completion."""
    reference = _reference(tick)
    tick.reset()
    clean = tick.start()
    operations = [r.operation for r in clean[0].requests]
    assert operations == ["TransactWriteItems", "SendMessageBatch", "TransactWriteItems"]
    tick.drain_queues()
    failures: list[str] = []
    for index, operation in enumerate(operations, start=1):
        tick.reset()
        tick.run(coordinator=Aim("coordinator", index, kind))
        failures.extend(f"request {index} ({operation}): {p}" for p in _problems(tick.state(), reference))
    assert not failures, "\n".join(failures)


def test_every_message_delivered_twice_at_once_changes_nothing(tick: FannedOutTick) -> None:
    reference = _reference(tick)
    tick.reset()
    deliveries = tick.run(copies=2)
    assert len(deliveries) >= 2 * PARTITIONS
    assert _problems(tick.state(), reference) == []


def test_a_partition_throttled_through_every_attempt_of_the_writer_resumes_on_redelivery(tick: FannedOutTick) -> None:
    reference = _reference(tick)
    first_transaction = 1 + next(
        i for i, r in enumerate(reference.last_requests) if r.operation == "TransactWriteItems"
    )
    tick.reset()
    # the first transaction and each of the writer's 7 resends throttled until botocore gives up
    aim = Aim(
        reference.last_partition,
        first_transaction,
        FaultKind.THROTTLED,
        then={first_transaction + n: FaultKind.THROTTLED for n in range(1, 8)},
    )
    deliveries = tick.run(aim)
    assert next(d.ended for d in deliveries if d.partition == reference.last_partition) == "raised"
    assert _problems(tick.state(), reference) == []


class ConflictInjector:
    """DynamoDB cancelling a transaction for a conflict with a concurrent write: the first send of
    every transaction on the toy's items comes back `TransactionConflict` on its first item."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.injected = 0

    @contextlib.contextmanager
    def installed(self) -> Iterator[ConflictInjector]:
        original = getattr(Endpoint, "_send")  # noqa: B009

        def send(endpoint: Endpoint, request: Any) -> AWSResponse:
            body = request.body if isinstance(request.body, bytes) else str(request.body).encode()
            if operation_of(request) == "TransactWriteItems" and ITEMS_TABLE.encode() in body:
                digest = hashlib.sha256(body).hexdigest()
                if digest not in self.seen:
                    self.seen.add(digest)
                    self.injected += 1
                    actions = len(json.loads(body)["TransactItems"])
                    reasons = [{"Code": "TransactionConflict", "Message": "conflict (injected)"}] + [
                        {"Code": "None"}
                    ] * (actions - 1)
                    error = {
                        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                        "Message": "Transaction cancelled (injected)",
                        "CancellationReasons": reasons,
                    }
                    headers: Any = {"Content-Type": "application/x-amz-json-1.0"}
                    return AWSResponse(request.url, 400, headers, _Raw(json.dumps(error).encode()))
            return original(endpoint, request)  # type: ignore[no-any-return]

        setattr(Endpoint, "_send", send)  # noqa: B010
        try:
            yield self
        finally:
            setattr(Endpoint, "_send", original)  # noqa: B010


class _Raw:
    def __init__(self, content: bytes) -> None:
        self._content = content

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._content


def test_transaction_conflicts_are_resent_and_counted_once(tick: FannedOutTick) -> None:
    reference = _reference(tick)
    tick.reset()
    with ConflictInjector().installed() as conflicts:
        deliveries = tick.run()
    assert conflicts.injected >= 2 * PARTITIONS
    assert [d.ended for d in deliveries] == ["ok"] * PARTITIONS
    assert _problems(tick.state(), reference) == []


def test_a_worker_dying_between_the_dlq_and_the_count_fails_its_item_once(tick: FannedOutTick) -> None:
    """A failed item goes to the DLQ before the transaction that counts it: a worker dying in
    between sends it twice, counts it once, and a replay of both copies applies it once."""
    tick.reset(poison=1)
    clean = tick.run()
    poisoned = next(d for d in clean if any(r.operation == "SendMessage" for r in d.requests))
    send = 1 + next(i for i, r in enumerate(poisoned.requests) if r.operation == "SendMessage")
    failed = tick.state()
    assert failed["status"] == "failed"
    assert failed["summary"]["failed"] == 1

    tick.reset(poison=1)
    deliveries = tick.run(Aim(poisoned.partition, send, FaultKind.DIES_AFTER))

    assert "died" in [d.ended for d in deliveries]
    state = tick.state()
    assert (state["status"], state["summary"], state["left in the work DLQ"]) == ("failed", failed["summary"], 2)
    # The bug fixed, the operator moves both copies back to the work queue.
    while dead := tick.toy.sqs.receive_message(QueueUrl=tick.toy.dead_letter_queue, MaxNumberOfMessages=10).get(
        "Messages"
    ):
        for message in dead:
            tick.toy.sqs.send_message(QueueUrl=tick.toy.work_queue, MessageBody=message["Body"])
            tick.toy.sqs.delete_message(QueueUrl=tick.toy.dead_letter_queue, ReceiptHandle=message["ReceiptHandle"])
    tick.worker = tick.work.worker(lambda: FixedWork(tick.toy.dynamodb))
    replays = tick.drain()

    assert [d.kind for d in replays] == ["items", "items"]
    replayed = tick.state()
    assert replayed["status"] == "succeeded"
    assert replayed["summary"] == {
        "found": ITEMS + ALREADY_DONE,
        "applied": ITEMS,
        "already_done": ALREADY_DONE,
        "failed": 0,
        "partitions": PARTITIONS,
    }
    assert len(replayed["tables"][OUTPUTS_TABLE]) == ITEMS + ALREADY_DONE


@pytest.mark.parametrize("kind", [FaultKind.LOST_RESPONSE, FaultKind.DIES_AFTER, FaultKind.REFUSED], ids=str)
def test_handing_on_a_continuation_survives_faults(tick: FannedOutTick, kind: FaultKind) -> None:
    """Each run has 20 s left, under the 30 s budget: one page, then the cursor is stored and the
    lease released in one write, and a continuation sent. Both requests meet the fault."""
    reference = _reference(tick)
    tick.remaining_ms = 20_000
    tick.reset()
    clean = tick.run()
    first = clean[0]
    operations = [r.operation for r in first.requests]
    # the lease (with the ledger's check), a page, its transaction(s), then the two under test
    assert operations[:2] == ["TransactWriteItems", "Query"]
    assert operations[-2:] == ["UpdateItem", "SendMessage"]
    failures: list[str] = []
    for index in (len(operations) - 1, len(operations)):
        tick.reset()
        tick.run(Aim(first.partition, index, kind))
        failures.extend(f"request {index} ({operations[index - 1]}): {p}" for p in _problems(tick.state(), reference))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", [FaultKind.DIES_AFTER, FaultKind.THROTTLED], ids=str)
def test_a_tick_finished_by_a_continuation_survives_every_fault_of_its_last_run(
    tick: FannedOutTick, kind: FaultKind
) -> None:
    """One page per run (20 s left, under the 30 s budget): the tick is finished by a continuation,
    whose every request meets the fault; the tick ends as the clean run, TickSucceeded included."""
    reference = _reference(tick)
    tick.remaining_ms = 20_000
    tick.reset()
    clean = tick.run()
    last = clean[-1]
    assert last.hop >= 1
    assert [r.operation for r in last.requests][-4:] == ["GetItem", "Query", "UpdateItem", "UpdateItem"]
    failures: list[str] = []
    for index, request in enumerate(last.requests, start=1):
        tick.reset()
        deliveries = tick.run(Aim(last.partition, index, kind, hop=last.hop))
        hit = next(d for d in deliveries if d.hop == last.hop)
        if len(hit.requests) < index or hit.requests[index - 1].fault is not kind:
            failures.append(f"request {index} ({request.operation}): the fault did not fire")
        failures.extend(f"request {index} ({request.operation}): {p}" for p in _problems(tick.state(), reference))
    assert not failures, "\n".join(failures)
