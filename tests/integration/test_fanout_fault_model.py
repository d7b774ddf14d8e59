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
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.endpoint import Endpoint

from clockless_tools.local.capacity import CapacitySettings, Start
from clockless_tools.local.dynamodb import EmbeddedDynamoDB
from clockless_tools.simulate.clock import SimulatedClock
from clockless_tools.simulate.faults import MODEL_KINDS, FaultKind
from clockless_tools.simulate.responses import made_up_response, operation_of
from tests.fault_sweep import SWEEPS, aimed_at, kinds
from tests.integration.fanned_out_tick import (
    ALREADY_DONE,
    CLEAN_SUMMARY,
    ITEMS,
    PARTITIONS,
    Aim,
    FannedOutTick,
    fanned_out_tick,
    problems,
    reference_run,
)
from tests.unit.kit.toy import (
    ITEMS_TABLE,
    OUTPUTS_TABLE,
    FixedWork,
)


@pytest.fixture
def tick(
    dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[FannedOutTick]:
    with fanned_out_tick(dynamodb_endpoint, monkeypatch, capsys) as fanned_out:
        yield fanned_out


# A throttle on every request of a partition run is test_fanout_throttling's first test, and a lost
# answer followed by a throttled resend combines two kinds each request meets here: both CI's.
@pytest.mark.parametrize("sweep", SWEEPS)
@pytest.mark.parametrize("kind", kinds(FaultKind.REFUSED, FaultKind.LOST_RESPONSE, FaultKind.DIES_AFTER), ids=str)
def test_every_request_of_a_partition_run_survives_every_fault(
    tick: FannedOutTick, kind: FaultKind, sweep: str
) -> None:
    """`make test`: one request per code path (a second page repeats the first's); CI: every request."""
    reference = reference_run(tick)
    failures: list[str] = []
    for index in aimed_at(reference.last_requests, sweep):
        request = reference.last_requests[index - 1]
        tick.reset()
        deliveries = tick.run(Aim(reference.last_partition, index, kind))
        hit = next(d for d in deliveries if d.partition == reference.last_partition)
        if len(hit.requests) < index or hit.requests[index - 1].fault is not kind:
            failures.append(f"request {index} ({request.operation}): the fault did not fire: {hit.requests}")
        failures.extend(f"request {index} ({request.operation}): {p}" for p in problems(tick.state(), reference))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", MODEL_KINDS, ids=str)
def test_every_request_of_the_coordinator_survives_every_fault(tick: FannedOutTick, kind: FaultKind) -> None:
    """Its claim (which records partitions_total), its SendMessageBatch, its completion."""
    reference = reference_run(tick)
    tick.reset()
    clean = tick.start()
    operations = [r.operation for r in clean[0].requests]
    assert operations == ["TransactWriteItems", "SendMessageBatch", "TransactWriteItems"]
    tick.drain_queues()
    failures: list[str] = []
    for index, operation in enumerate(operations, start=1):
        tick.reset()
        tick.run(coordinator=Aim("coordinator", index, kind))
        failures.extend(f"request {index} ({operation}): {p}" for p in problems(tick.state(), reference))
    assert not failures, "\n".join(failures)


def test_every_message_delivered_twice_at_once_changes_nothing(tick: FannedOutTick) -> None:
    reference = reference_run(tick)
    tick.reset()
    deliveries = tick.run(copies=2)
    assert len(deliveries) >= 2 * PARTITIONS
    assert problems(tick.state(), reference) == []


def test_a_partition_throttled_past_every_attempt_of_the_old_writer_finishes_without_redelivery(
    tick: FannedOutTick,
) -> None:
    reference = reference_run(tick)
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
    # Waited out within the attempt's budget: no failure, no visibility timeout.
    assert [d.ended for d in deliveries] == ["ok"] * PARTITIONS
    assert problems(tick.state(), reference) == []


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
                    return made_up_response(request, 400, json.dumps(error).encode())
            return original(endpoint, request)  # type: ignore[no-any-return]

        setattr(Endpoint, "_send", send)  # noqa: B010
        try:
            yield self
        finally:
            setattr(Endpoint, "_send", original)  # noqa: B010


def test_transaction_conflicts_are_resent_and_counted_once(tick: FannedOutTick) -> None:
    reference = reference_run(tick)
    tick.reset()
    with ConflictInjector().installed() as conflicts:
        deliveries = tick.run()
    assert conflicts.injected >= 2 * PARTITIONS
    assert [d.ended for d in deliveries] == ["ok"] * PARTITIONS
    assert problems(tick.state(), reference) == []


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
    assert replayed["summary"] == CLEAN_SUMMARY
    assert len(replayed["tables"][OUTPUTS_TABLE]) == ITEMS + ALREADY_DONE


@pytest.mark.parametrize("kind", [FaultKind.LOST_RESPONSE, FaultKind.DIES_AFTER, FaultKind.REFUSED], ids=str)
def test_handing_on_a_continuation_survives_faults(tick: FannedOutTick, kind: FaultKind) -> None:
    """Each run has 20 s left, under the 30 s budget: one page, then the cursor is stored and the
    lease released in one write, and a continuation sent. Both requests meet the fault."""
    reference = reference_run(tick)
    tick.remaining_ms = 20_000
    tick.reset()
    clean = tick.run()
    first = clean[0]
    operations = [r.operation for r in first.requests]
    # the message's visibility bound, the lease (with the ledger's check), a page, its
    # transaction(s), then the two under test
    assert operations[:3] == ["ChangeMessageVisibility", "TransactWriteItems", "Query"]
    assert operations[-2:] == ["UpdateItem", "SendMessage"]
    failures: list[str] = []
    for index in (len(operations) - 1, len(operations)):
        tick.reset()
        tick.run(Aim(first.partition, index, kind))
        failures.extend(f"request {index} ({operations[index - 1]}): {p}" for p in problems(tick.state(), reference))
    assert not failures, "\n".join(failures)


# A throttle on each of these requests is CI's: the same lease, page, cursor and finish requests of a
# partition run each meet one in make test (test_fanout_throttling's first test).
@pytest.mark.parametrize(
    "kind", [FaultKind.DIES_AFTER, pytest.param(FaultKind.THROTTLED, marks=pytest.mark.slow)], ids=str
)
def test_a_tick_finished_by_a_continuation_survives_every_fault_of_its_last_run(
    tick: FannedOutTick, kind: FaultKind
) -> None:
    """One page per run (20 s left, under the 30 s budget): the tick is finished by a continuation,
    whose every request meets the fault; the tick ends as the clean run, TickSucceeded included."""
    reference = reference_run(tick)
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
        failures.extend(f"request {index} ({request.operation}): {p}" for p in problems(tick.state(), reference))
    assert not failures, "\n".join(failures)


def test_a_throttled_send_of_the_partitions_is_waited_out_in_the_same_attempt(tick: FannedOutTick) -> None:
    """SendMessageBatch refused `RequestThrottled` until botocore gives up: the coordinator sends it
    again within its attempt, so the tick needs no retry of Lambda's and no partition is lost."""
    reference = reference_run(tick)
    tick.reset()

    attempts = tick.start(Aim("coordinator", 2, FaultKind.THROTTLED))

    assert [attempt.ended for attempt in attempts] == ["executed"]
    assert attempts[0].requests[1].operation == "SendMessageBatch"
    assert attempts[0].requests[1].fault is FaultKind.THROTTLED
    tick.drain()
    assert problems(tick.state(), reference) == []


def test_a_throttled_continuation_send_is_waited_out_without_a_visibility_timeout(tick: FannedOutTick) -> None:
    """Each run has 20 s left (one page, then a continuation): its SendMessage refused
    `RequestThrottled` until botocore gives up is sent again within the attempt."""
    reference = reference_run(tick)
    tick.remaining_ms = 20_000
    tick.reset()
    first = tick.run()[0]
    send = len(first.requests)
    assert first.requests[-1].operation == "SendMessage"
    tick.reset()
    tick.stalls = 0

    deliveries = tick.run(Aim(first.partition, send, FaultKind.THROTTLED))

    hit = next(d for d in deliveries if d.partition == first.partition)
    assert hit.requests[send - 1].fault is FaultKind.THROTTLED
    assert hit.ended == "ok", hit.ended  # its message reported processed, not left to come back
    assert tick.stalls == 0
    assert problems(tick.state(), reference) == []


# CI's: each kind meets a partition run in make test above, and the emulator's throttles slow a
# tick in test_fanout_throttling's; together, a couple of seconds a kind on top of make test's budget.
@pytest.mark.slow
@pytest.mark.parametrize("kind", [FaultKind.DIES_AFTER, FaultKind.REFUSED, FaultKind.LOST_RESPONSE], ids=str)
def test_the_fault_model_holds_on_the_capacity_emulator(
    tick: FannedOutTick, dynamodb_server: EmbeddedDynamoDB, kind: FaultKind
) -> None:
    """A fault on the partition run's first item transaction while DynamoDB's limits, by physical
    partition and scaled down, throttle the run around it: the tick ends as the clean run."""
    reference = reference_run(tick)
    first_transaction = 1 + next(
        i
        for i, r in enumerate(reference.last_requests)
        if r.operation == "TransactWriteItems" and i > 0  # after the lease
    )
    clock = SimulatedClock(tick.clock)  # the kit's waits move time-machine's time, which the emulator reads
    tick.worker.clockless_runner.clock = clock
    tick.job.clock = clock
    tick.reset()
    capacity = dynamodb_server.enforce(CapacitySettings(start=Start.COLD, scale=500))
    assert capacity is not None
    capacity.clock = time.time
    try:
        tick.run(Aim(reference.last_partition, first_transaction, kind))
    finally:
        dynamodb_server.enforce(None)
    assert sum(capacity.stats.throttled.values()) > 0
    assert problems(tick.state(), reference) == []
