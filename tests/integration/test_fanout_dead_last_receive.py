"""The fault model's "the attempt dies" on a partition message's last receive, and receives that
never reach a worker: the work queue has the template's RedrivePolicy (maxReceiveCount 5), the
poller has received the message four times, and the fifth run dies right after one of its requests
(or no worker sees a receive at all). Nothing of that run can record anything and SQS moves the
message to the work DLQ, yet the tick must not stay `started`: once its bound has passed the tick
reaper (clockless.reaper) settles it, `failed` naming the partition (or `succeeded` when the death
came after the partition's done transaction), whatever the reaper's own requests meet; and a
redrive after the fix makes the tick `succeeded` with the clean run's tables and counters
(docs/fan-out.md, "The tick reaper")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest

from clockless.ledger import LedgerEntry
from clockless.reaper import ReapedJob, StuckTicks, reap
from clockless_tools.simulate.faults import MODEL_KINDS, AttemptDied, FaultKind
from tests.integration.fanned_out_tick import (
    SCHEDULED,
    VISIBILITY,
    FannedOutTick,
    fanned_out_tick,
    problems,
    reference_run,
)
from tests.unit.kit.toy import TOY_JOB, Context, sqs_event

MAX_RECEIVES: Final = 5
# The worker's Timeout: each run starts with this left, and a dead one is over when it is spent.
TIMEOUT: Final = timedelta(seconds=300)
# The last receive's request before its run: the message hidden until the attempt is over.
BEFORE_THE_RUN: Final = ["ChangeMessageVisibility"]
REAPER_BOUND: Final = timedelta(minutes=10)
# Each case starts an hour and a few visibility timeouts after the last on the same scheduled time, so
# the tick's scheduled time falls further behind the clock than the template's 48 h lookback.
REAPER_LOOKBACK: Final = timedelta(days=30)
# What the reaper does for a tick whose partition died holding its lease: the job's open ticks, the
# finisher's read of the entry (not complete), the tick's partition records, the settling update.
REAPER_SETTLING: Final = ["Query", "GetItem", "Query", "UpdateItem"]


@pytest.fixture
def tick(
    dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[FannedOutTick]:
    with fanned_out_tick(dynamodb_endpoint, monkeypatch, capsys, WORK_MAX_RECEIVES=str(MAX_RECEIVES)) as fanned_out:
        sqs, toy = fanned_out.toy.sqs, fanned_out.toy
        dlq = sqs.get_queue_attributes(QueueUrl=toy.dead_letter_queue, AttributeNames=["QueueArn"])["Attributes"]
        policy = {"deadLetterTargetArn": dlq["QueueArn"], "maxReceiveCount": str(MAX_RECEIVES)}
        sqs.set_queue_attributes(QueueUrl=toy.work_queue, Attributes={"RedrivePolicy": json.dumps(policy)})
        yield fanned_out


def _receive(tick: FannedOutTick, visibility: timedelta = VISIBILITY) -> list[dict[str, Any]]:
    """The poller's ReceiveMessage (which moves a message past its receives to the DLQ)."""
    response = tick.toy.sqs.receive_message(
        QueueUrl=tick.toy.work_queue,
        MaxNumberOfMessages=10,
        VisibilityTimeout=int(visibility.total_seconds()),
        AttributeNames=["ApproximateReceiveCount"],
    )
    return list(response.get("Messages") or [])


def _die_on_the_last_receive(tick: FannedOutTick, request: int, receive: int = MAX_RECEIVES) -> list[str]:
    """The tick fanned out; its partition message received until `receive` (each a worker that never
    finished: the poller shows it again after the visibility timeout), then that receive's run
    dies right after `request` and is killed at its timeout. Returns that run's operations."""
    tick.reset()
    tick.start()
    for _ in range(receive - 1):
        assert len(_receive(tick)) == 1
        tick.clock.shift(VISIBILITY + timedelta(seconds=1))
    (last,) = _receive(tick)
    assert last["Attributes"]["ApproximateReceiveCount"] == str(receive)
    tick.faults.arm(request, FaultKind.DIES_AFTER, count_spared=True)
    try:
        with pytest.raises(AttemptDied):
            tick.worker(sqs_event([last]), Context(remaining_ms=int(TIMEOUT.total_seconds() * 1000)))
    finally:
        operations = [r.operation for r in tick.faults.requests()]
        tick.faults.disarm()
    tick.clock.shift(TIMEOUT)  # the attempt is killed at its timeout
    return operations


def _poll_until_dead_lettered(tick: FannedOutTick) -> None:
    """The poller goes on, and no worker sees what it receives (the message died, or the function
    cannot start): past the last receive, SQS moves the message to the work DLQ."""
    for _ in range(MAX_RECEIVES + 1):
        tick.clock.shift(VISIBILITY + timedelta(seconds=1))
        if not _receive(tick):
            break
    assert _left_in_work_queue(tick) == 0
    assert _dead_lettered(tick) == 1


def _reap(tick: FannedOutTick, kind: FaultKind | None = None, at: int = 0) -> list[str]:
    """The tick-reaper job's tick once the bound has passed; `kind` at its `at`-th request. A tick
    of it that fails is delivered again (Lambda's asynchronous retries, else its next tick), as
    often as it fails. Its requests, first delivery first."""
    tick.clock.shift(REAPER_BOUND)
    now = datetime.fromtimestamp(time.time(), UTC)
    requests: list[str] = []
    for delivery in range(3):
        if delivery == 0 and kind is not None:
            tick.faults.arm(at, kind, count_spared=True)
        else:
            tick.faults.watch()
        try:
            reap(
                StuckTicks(tick.toy.dynamodb, "LedgerTable"),
                (ReapedJob(TOY_JOB, REAPER_BOUND),),
                now=now,
                lookback=REAPER_LOOKBACK,
            )
        except (AttemptDied, Exception):  # a death, a refusal, a throttle past botocore's retries: delivered again
            continue
        finally:
            requests.extend(r.operation for r in tick.faults.requests())
            tick.faults.disarm()
        return requests
    raise AssertionError(f"the reaper failed every delivery: {requests}")


def _entry(tick: FannedOutTick) -> LedgerEntry:
    item = tick.toy.dynamodb.get_item(
        TableName="LedgerTable", Key={"job": {"S": TOY_JOB}, "scheduled_time": {"S": SCHEDULED}}, ConsistentRead=True
    )["Item"]
    return LedgerEntry.from_item(item)


def _left_in_work_queue(tick: FannedOutTick) -> int:
    names = [f"ApproximateNumberOfMessages{state}" for state in ("", "NotVisible", "Delayed")]
    found = tick.toy.sqs.get_queue_attributes(QueueUrl=tick.toy.work_queue, AttributeNames=names)["Attributes"]
    return sum(int(found[name]) for name in names)


def _dead_lettered(tick: FannedOutTick) -> int:
    dead = tick.toy.sqs.get_queue_attributes(
        QueueUrl=tick.toy.dead_letter_queue, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(dead["ApproximateNumberOfMessages"])


def _redrive(tick: FannedOutTick) -> int:
    """`clockless work redrive`: every message of the work DLQ back to the work queue."""
    moved = 0
    sqs = tick.toy.sqs
    while dead := sqs.receive_message(QueueUrl=tick.toy.dead_letter_queue, MaxNumberOfMessages=10).get("Messages"):
        for message in dead:
            sqs.send_message(QueueUrl=tick.toy.work_queue, MessageBody=message["Body"])
            sqs.delete_message(QueueUrl=tick.toy.dead_letter_queue, ReceiptHandle=message["ReceiptHandle"])
            moved += 1
    return moved


def _settled_then_redriven(tick: FannedOutTick, where: str, kind: FaultKind | None = None, at: int = 0) -> list[str]:
    """The message dead-lettered, the reaper's tick (under `kind` at its `at`-th request), then a
    redrive: the tick settled by then (`failed` naming partition 0, or counting it never started
    when no run of it took its lease; `succeeded` when it died after its done transaction), and
    after the redrive the clean run's tables and counters."""
    _poll_until_dead_lettered(tick)
    _reap(tick, kind, at)
    entry = _entry(tick)
    found = []
    if entry.status == "started":
        found.append(f"{where}: the tick is still started after the reaper")
    elif entry.status == "failed" and [f.key for f in entry.failures][:1] not in (["partition 0"], ["1 partitions"]):
        found.append(f"{where}: failed without naming partition 0: {entry.error}")
    if _redrive(tick) != 1:
        found.append(f"{where}: not one message in the work DLQ")
    tick.drain()
    found.extend(f"{where}: {problem}" for problem in problems(tick.state(), reference_run(tick)))
    return found


def test_a_worker_killed_on_its_last_receive_is_settled_failed_by_name_then_a_redrive_succeeds(
    tick: FannedOutTick,
) -> None:
    reference_run(tick)
    operations = _die_on_the_last_receive(tick, len(BEFORE_THE_RUN) + 2)
    assert operations == [*BEFORE_THE_RUN, "TransactWriteItems", "Query"]
    _poll_until_dead_lettered(tick)
    assert _entry(tick).status == "started"  # nothing of the kit ran after the death

    assert _reap(tick) == REAPER_SETTLING

    entry = _entry(tick)
    assert entry.status == "failed"
    assert str(entry.error).startswith("partition 0 not done by the tick's bound")
    assert [(f.key, f.reason) for f in entry.failures] == [("partition 0", "partition")]
    assert _redrive(tick) == 1
    tick.drain()
    assert problems(tick.state(), reference_run(tick)) == []
    assert _entry(tick).status == "succeeded"  # the redrive's done settled it again


@pytest.mark.slow
def test_a_death_after_any_request_of_the_last_receive_leaves_no_tick_started(tick: FannedOutTick) -> None:
    reference = reference_run(tick)
    clean = len(reference.last_requests)  # the clean run's, its visibility bound among them
    failures: list[str] = []
    for request in range(1, clean + 1):
        operations = _die_on_the_last_receive(tick, request)
        failures.extend(_settled_then_redriven(tick, f"died after request {request} ({operations[request - 1]})"))
    assert not failures, "\n".join(failures)


# ----------------------------------------------------------------- receives no worker ever sees
@pytest.mark.parametrize(
    "seen",
    [
        pytest.param(MAX_RECEIVES - 1, id="the receive before the last dies, the last never reaches a worker"),
        pytest.param(0, id="no receive ever reaches a worker"),
    ],
)
def test_receives_no_worker_sees_are_settled_by_the_reaper_then_a_redrive_succeeds(
    tick: FannedOutTick, seen: int
) -> None:
    reference_run(tick)
    if seen:
        # its bound, its lease and first page, then it dies; the last receive is counted, never run
        _die_on_the_last_receive(tick, len(BEFORE_THE_RUN) + 2, receive=seen)
    else:
        tick.reset()
        tick.start()

    assert _settled_then_redriven(tick, f"{seen} receives seen") == []


# ----------------------------------------------------------------- the reaper under the fault model
def _reaper_under_fault(tick: FannedOutTick, at: int, kind: FaultKind) -> list[str]:
    _die_on_the_last_receive(tick, len(BEFORE_THE_RUN) + 2)
    return _settled_then_redriven(tick, f"the reaper's request {at} {kind}", kind, at)


# Each of the reaper's requests (REAPER_SETTLING) meets each kind of the fault model; its tick is
# delivered again until it succeeds. One case in `make test` (its settling update applied, then the
# attempt dies); CI all.
@pytest.mark.parametrize(
    ("at", "kind"),
    [
        pytest.param(at, kind, marks=() if (at, kind) == (4, FaultKind.DIES_AFTER) else pytest.mark.slow)
        for at in range(1, len(REAPER_SETTLING) + 1)
        for kind in MODEL_KINDS
    ],
    ids=str,
)
def test_the_reaper_settles_the_tick_once_whatever_fault_it_meets(
    tick: FannedOutTick, at: int, kind: FaultKind
) -> None:
    reference_run(tick)
    assert _reaper_under_fault(tick, at, kind) == []


# ----------------------------------------------------------------- the last receive's visibility bound
def _bound_under_fault(tick: FannedOutTick, kind: FaultKind) -> list[str]:
    """The last receive's visibility bound meets `kind`; the run goes on (or dies, for that kind,
    and the reaper settles it). The tick ends as a clean run's."""
    if kind is FaultKind.DIES_AFTER:
        _die_on_the_last_receive(tick, 1)
        return _settled_then_redriven(tick, "died after its visibility bound")
    tick.reset()
    tick.start()
    for _ in range(MAX_RECEIVES - 1):
        assert len(_receive(tick)) == 1
        tick.clock.shift(VISIBILITY + timedelta(seconds=1))
    (last,) = _receive(tick)
    tick.faults.arm(1, kind, count_spared=True)
    try:
        answer = tick.worker(sqs_event([last]), Context(remaining_ms=int(TIMEOUT.total_seconds() * 1000)))
    finally:
        first = tick.faults.requests()[0]
        met = (first.operation, first.fault)
        tick.faults.disarm()
    where = f"the last receive's visibility bound {kind}"
    assert met == (BEFORE_THE_RUN[0], kind), f"{where}: the fault did not fire: {met}"
    found = [] if not answer["batchItemFailures"] else [f"{where}: the run failed"]
    tick.toy.sqs.delete_message(QueueUrl=tick.toy.work_queue, ReceiptHandle=last["ReceiptHandle"])
    found.extend(f"{where}: {problem}" for problem in problems(tick.state(), reference_run(tick)))
    return found


# One case in `make test` (the bound refused: the run goes on without it); CI every kind.
@pytest.mark.parametrize(
    "kind", [pytest.param(kind, marks=() if kind is FaultKind.REFUSED else pytest.mark.slow) for kind in MODEL_KINDS]
)
def test_the_last_receives_bound_meets_every_fault_and_the_tick_ends_as_the_clean_run(
    tick: FannedOutTick, kind: FaultKind
) -> None:
    reference_run(tick)
    assert _bound_under_fault(tick, kind) == []
