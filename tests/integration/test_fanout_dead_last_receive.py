"""The fault model's "the attempt dies" on a partition message's last receive: the work queue has
the template's RedrivePolicy (maxReceiveCount 5), the poller has received the message four times,
and the fifth run dies right after one of its requests. Nothing of that run can record anything,
yet the tick must not stay `started`: within the worker's timeout plus the watch's 10 s the tick is
terminal (`failed` naming the partition, or `succeeded` when the death came after the partition's
done transaction), the message is in the work DLQ, and a redrive after the fix makes the tick
`succeeded` with the clean run's tables and counters (docs/fan-out.md, "A failed partition
message")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest

from clockless.fanout.watch import WATCH_MARGIN_SECONDS, wait_for_last_receive_ms
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
# The last receive's requests before its run: the watch's SendMessage (the first: a death after it
# is watched), then the message hidden until the attempt is over (ChangeMessageVisibility).
BEFORE_THE_RUN: Final = ["SendMessage", "ChangeMessageVisibility"]
WATCHED_FROM: Final = 1
# What the watch does over a run that died holding its lease: its own message's visibility bound,
# the partition record read, the partition named on the tick (with its check), then the finisher's
# read, sum and say.
WATCH_SETTLING: Final = ["ChangeMessageVisibility", "GetItem", "TransactWriteItems", "GetItem", "Query", "UpdateItem"]


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


def _settle(tick: FannedOutTick, requests: list[str] | None = None) -> timedelta:
    """The poller from the attempt's end until the watch is delivered: how long that took (and
    the watch's requests, into `requests`)."""
    waited = timedelta(0)
    while waited <= timedelta(seconds=WATCH_MARGIN_SECONDS + 1):
        for message in _receive(tick, visibility=timedelta(seconds=60)):
            body = json.loads(message["Body"])
            assert body["kind"] == "watch", f"only the watch comes back to the work queue, not {body}"
            tick.faults.watch()
            try:
                assert not tick.worker(sqs_event([message]), Context())["batchItemFailures"]
            finally:
                if requests is not None:
                    requests.extend(r.operation for r in tick.faults.requests())
                tick.faults.disarm()
            tick.toy.sqs.delete_message(QueueUrl=tick.toy.work_queue, ReceiptHandle=message["ReceiptHandle"])
            # The poller goes on: its next receive, once the partition message shows again (the
            # same moment, give or take SQS's rounding), moves it to the DLQ.
            tick.clock.shift(timedelta(seconds=1))
            assert _receive(tick) == []
            return waited
        tick.clock.shift(timedelta(seconds=1))
        waited += timedelta(seconds=1)
    raise AssertionError("no watch came within the worker's timeout plus its margin")


def _entry(tick: FannedOutTick) -> LedgerEntry:
    item = tick.toy.dynamodb.get_item(
        TableName="LedgerTable", Key={"job": {"S": TOY_JOB}, "scheduled_time": {"S": SCHEDULED}}, ConsistentRead=True
    )["Item"]
    return LedgerEntry.from_item(item)


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


def _judge(tick: FannedOutTick, request: int) -> list[str]:
    operations = _die_on_the_last_receive(tick, request)
    where = f"died after request {request} ({operations[request - 1]})"
    assert operations[: len(BEFORE_THE_RUN)] == BEFORE_THE_RUN[:request]
    found: list[str] = []
    waited = _settle(tick)
    if "ChangeMessageVisibility" not in operations:
        # It died before bounding its message's visibility: the poller's 1,800 s hide it, then the
        # next receive moves it to the DLQ.
        tick.clock.shift(VISIBILITY)
        assert _receive(tick) == []
    if waited > timedelta(seconds=WATCH_MARGIN_SECONDS + 1):
        found.append(f"{where}: settled {waited} after the attempt's end")
    entry = _entry(tick)
    if entry.status == "started":
        found.append(f"{where}: the tick is still started after its watch")
    elif entry.status == "failed" and [f.key for f in entry.failures][:1] != ["partition 0"]:
        found.append(f"{where}: failed without naming partition 0: {entry.error}")
    # The message reached the DLQ at the attempt's end plus the margin (the poller's receive moved it).
    dead = tick.toy.sqs.get_queue_attributes(
        QueueUrl=tick.toy.dead_letter_queue, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    if int(dead["ApproximateNumberOfMessages"]) != 1:
        found.append(f"{where}: {dead['ApproximateNumberOfMessages']} messages in the work DLQ, not the one")
    _redrive(tick)
    tick.drain()
    found.extend(f"{where}: {problem}" for problem in problems(tick.state(), reference_run(tick)))
    return found


def test_a_worker_killed_on_its_last_receive_settles_its_tick_failed_by_name_then_a_redrive_succeeds(
    tick: FannedOutTick,
) -> None:
    reference_run(tick)
    operations = _die_on_the_last_receive(tick, len(BEFORE_THE_RUN) + 2)
    assert operations == [*BEFORE_THE_RUN, "TransactWriteItems", "Query"]

    watch: list[str] = []
    waited = _settle(tick, watch)

    assert waited <= timedelta(seconds=WATCH_MARGIN_SECONDS + 1)
    assert watch == WATCH_SETTLING
    entry = _entry(tick)
    assert entry.status == "failed"
    assert str(entry.error).startswith("partition 0 failed every receive")
    assert [(f.key, f.reason) for f in entry.failures] == [("partition 0", "partition")]
    assert _redrive(tick) == 1

    tick.drain()

    assert problems(tick.state(), reference_run(tick)) == []


@pytest.mark.slow
def test_a_death_after_any_request_of_the_last_receive_leaves_no_tick_started(tick: FannedOutTick) -> None:
    reference = reference_run(tick)
    clean = len(reference.last_requests) + 1  # the clean run's (its visibility bound among them), and the watch
    failures: list[str] = []
    for request in range(WATCHED_FROM, clean + 1):
        failures.extend(_judge(tick, request))
    assert not failures, "\n".join(failures)


def _left_in_work_queue(tick: FannedOutTick) -> int:
    names = [f"ApproximateNumberOfMessages{state}" for state in ("", "NotVisible", "Delayed")]
    found = tick.toy.sqs.get_queue_attributes(QueueUrl=tick.toy.work_queue, AttributeNames=names)["Attributes"]
    return sum(int(found[name]) for name in names)


def _watch_under_fault(tick: FannedOutTick, request: int, kind: FaultKind) -> list[str]:
    """The watch's first delivery meets `kind` at its `request`-th request; the poller goes on (a
    delivery that reported the watch failed shows it again after 10 s, one that died after the 60 s
    it was hidden for) until the work queue is empty. How each delivery ended."""
    ended: list[str] = []
    for _ in range(700):  # seconds of simulated time
        for message in _receive(tick, visibility=timedelta(seconds=60)):
            if ended:
                tick.faults.watch()
            else:
                tick.faults.arm(request, kind, count_spared=True)
            try:
                answer = tick.worker(sqs_event([message]), Context())
                ended.append("reported failed" if answer["batchItemFailures"] else "ok")
            except AttemptDied:
                ended.append("died")
            except Exception:  # the whole batch failed (Powertools raises): the message comes back
                ended.append("raised")
            finally:
                tick.faults.disarm()
            if ended[-1] == "ok":
                tick.toy.sqs.delete_message(QueueUrl=tick.toy.work_queue, ReceiptHandle=message["ReceiptHandle"])
        if ended and ended[-1] == "ok" and not _left_in_work_queue(tick):
            return ended
        # what a delivery that just ended so left hidden: the attempt's 300 s and the margin (its
        # bound, or the poller's 60 s when it died before the bound), the kit's 10 s backoff
        waits = {"died": 310, "raised": 10, "reported failed": 10}
        tick.clock.shift(timedelta(seconds=waits.get(ended[-1], 0) if ended else 0, milliseconds=1001))
    raise AssertionError(f"the watch did not settle: {ended}")


def _judge_watch(tick: FannedOutTick, request: int, kind: FaultKind) -> list[str]:
    """A death on the last receive (its first page read), then the watch under the fault."""
    _die_on_the_last_receive(tick, WATCHED_FROM + 1)
    where = f"the watch's request {request} {kind}"
    ended = _watch_under_fault(tick, request, kind)
    entry = _entry(tick)
    found = []
    if (entry.status, [f.key for f in entry.failures]) != ("failed", ["partition 0"]):
        found.append(f"{where} ({ended}): the tick is {entry.status}, failures {[f.key for f in entry.failures]}")
    _redrive(tick)
    tick.drain()
    found.extend(f"{where}: {problem}" for problem in problems(tick.state(), reference_run(tick)))
    return found


# The watch is delivered at least once like every message: each of its six requests (WATCH_SETTLING)
# meets each kind of the fault model. One case in `make test` (its transaction applied, then the
# attempt dies); CI all.
NAMING: Final = WATCH_SETTLING.index("TransactWriteItems") + 1


@pytest.mark.parametrize(
    ("at", "kind"),
    [
        pytest.param(at, kind, marks=() if (at, kind) == (NAMING, FaultKind.DIES_AFTER) else pytest.mark.slow)
        for at in range(1, len(WATCH_SETTLING) + 1)
        for kind in MODEL_KINDS
    ],
    ids=str,
)
def test_the_watch_settles_the_tick_once_whatever_fault_it_meets(tick: FannedOutTick, at: int, kind: FaultKind) -> None:
    reference_run(tick)
    assert _judge_watch(tick, at, kind) == []


# ----------------------------------------------------------------- a last receive no worker ever sees
# A poller step: how often the test's poller looks at the queue once the watch waits.
POLL_STEP: Final = timedelta(seconds=60)


def _poll_without_the_partition(tick: FannedOutTick, limit: timedelta) -> tuple[timedelta, list[str]]:
    """Lambda's poller from the attempt's end, except that the partition message's receives never
    reach the worker (an init failure, a batch never invoked): watches run, until the tick is
    terminal. How long that took, and what each watch delivery answered."""
    waited, outcomes = timedelta(0), []
    while waited <= limit:
        for message in _receive(tick, visibility=timedelta(seconds=60)):
            if json.loads(message["Body"])["kind"] != "watch":
                continue  # received (its count goes up, it hides for the visibility timeout), never run
            tick.faults.watch()
            try:
                assert not tick.worker(sqs_event([message]), Context())["batchItemFailures"]
            finally:
                tick.faults.disarm()
            tick.toy.sqs.delete_message(QueueUrl=tick.toy.work_queue, ReceiptHandle=message["ReceiptHandle"])
            outcomes.append(_entry(tick).status)
        if _entry(tick).status != "started":
            return waited, outcomes
        tick.clock.shift(POLL_STEP)
        waited += POLL_STEP
    raise AssertionError(f"the tick is still started {waited} after the attempt's end: {outcomes}")


def test_a_last_receive_no_worker_sees_settles_its_tick_failed_by_name_then_a_redrive_succeeds(
    tick: FannedOutTick,
) -> None:
    reference_run(tick)
    # the receive before the last: its watch, its bound, its lease and first page, then it dies
    _die_on_the_last_receive(tick, len(BEFORE_THE_RUN) + 2, receive=MAX_RECEIVES - 1)
    # its watch waits out the last receive: the backoff, the visibility timeout, SQS's count lag
    waits_ms = wait_for_last_receive_ms(MAX_RECEIVES - 1, int(VISIBILITY.total_seconds()))
    bound = TIMEOUT + timedelta(milliseconds=waits_ms)

    waited, outcomes = _poll_without_the_partition(tick, bound + 2 * POLL_STEP)

    assert waited >= VISIBILITY  # not before the unseen receive could have ended
    entry = _entry(tick)
    assert entry.status == "failed"
    assert str(entry.error).startswith("partition 0 failed every receive")
    assert [(f.key, f.reason) for f in entry.failures] == [("partition 0", "partition")]
    assert outcomes[:-1] == ["started"] * (len(outcomes) - 1)  # the watch waited, then named it once
    assert _redrive(tick) == 1

    tick.drain()

    assert problems(tick.state(), reference_run(tick)) == []


def test_a_death_right_after_the_last_receive_sent_its_watch_settles_its_tick(tick: FannedOutTick) -> None:
    reference_run(tick)
    assert _judge(tick, WATCHED_FROM) == []


def _last_receive_under_fault(tick: FannedOutTick, at: int, kind: FaultKind) -> list[str]:
    """The last receive's `at`-th request (its watch's send, its visibility bound) meets `kind`;
    the run goes on (or dies, for that kind). Once its watch is in, the tick is as a clean run's:
    `succeeded` (a refused watch was only a watch less), or, after a death, `failed` by name and
    then the redrive's clean run."""
    if kind is FaultKind.DIES_AFTER:
        return _judge(tick, at)
    tick.reset()
    tick.start()
    for _ in range(MAX_RECEIVES - 1):
        assert len(_receive(tick)) == 1
        tick.clock.shift(VISIBILITY + timedelta(seconds=1))
    (last,) = _receive(tick)
    tick.faults.arm(at, kind, count_spared=True)
    try:
        answer = tick.worker(sqs_event([last]), Context(remaining_ms=int(TIMEOUT.total_seconds() * 1000)))
    finally:
        met = [(r.operation, r.fault) for r in tick.faults.requests()][at - 1]
        tick.faults.disarm()
    where = f"the last receive's request {at} {kind}"
    assert met == (BEFORE_THE_RUN[at - 1], kind), f"{where}: the fault did not fire: {met}"
    found = [] if not answer["batchItemFailures"] else [f"{where}: the run failed"]
    tick.toy.sqs.delete_message(QueueUrl=tick.toy.work_queue, ReceiptHandle=last["ReceiptHandle"])
    tick.clock.shift(TIMEOUT + timedelta(seconds=WATCH_MARGIN_SECONDS + 1))
    tick.drain()  # the watch (or two, its send's answer lost and resent), which finds the tick settled
    found.extend(f"{where}: {problem}" for problem in problems(tick.state(), reference_run(tick)))
    return found


# One case in `make test` (the watch's send refused: the run goes on without it); CI every kind.
@pytest.mark.parametrize(
    ("at", "kind"),
    [
        pytest.param(at, kind, marks=() if (at, kind) == (1, FaultKind.REFUSED) else pytest.mark.slow)
        for at in range(1, len(BEFORE_THE_RUN) + 1)
        for kind in MODEL_KINDS
    ],
    ids=str,
)
def test_the_last_receives_watch_and_bound_meet_every_fault_and_the_tick_ends_as_the_clean_run(
    tick: FannedOutTick, at: int, kind: FaultKind
) -> None:
    reference_run(tick)
    assert _last_receive_under_fault(tick, at, kind) == []


# ----------------------------------------------------------------- every watch lost: the tick reaper
# The double fault the watches leave to the work DLQ: the last receive's run dies and no watch over
# it is ever delivered (the receive before it was not seen, its watch refused or lost). The tick
# reaper (clockless.reaper) settles the tick once its bound has passed, whatever request the death
# came after; a redrive then runs the partition to the clean run's tables and counters.
REAPER_BOUND: Final = timedelta(minutes=10)
# Each case starts an hour and a few visibility timeouts after the last on the same scheduled time, so
# the tick's scheduled time falls further behind the clock than the template's 48 h lookback.
REAPER_LOOKBACK: Final = timedelta(days=30)


def _reaped_without_watches(tick: FannedOutTick, request: int, reaped_as: list[str] | None = None) -> list[str]:
    _die_on_the_last_receive(tick, request)
    where = f"died after request {request}, every watch lost"
    # The poller: the partition message shows again (its bound, or the visibility timeout) and the
    # receive past its count moves it to the work DLQ; each watch it meets is lost, never run.
    tick.clock.shift(VISIBILITY + timedelta(seconds=1))
    for message in _receive(tick):
        assert json.loads(message["Body"])["kind"] == "watch", message["Body"]
        tick.toy.sqs.delete_message(QueueUrl=tick.toy.work_queue, ReceiptHandle=message["ReceiptHandle"])
    assert _left_in_work_queue(tick) == 0
    tick.clock.shift(REAPER_BOUND)
    now = datetime.fromtimestamp(time.time(), UTC)
    reaped = reap(
        StuckTicks(tick.toy.dynamodb, "LedgerTable"),
        (ReapedJob(TOY_JOB, REAPER_BOUND),),
        now=now,
        lookback=REAPER_LOOKBACK,
    )
    entry = _entry(tick)
    if reaped_as is not None:
        reaped_as.extend([entry.status, str(entry.error)])
    found = []
    if entry.status == "started":
        found.append(f"{where}: the tick is still started after the reaper ({reaped})")
    elif entry.status == "failed" and [f.key for f in entry.failures][:1] not in (["partition 0"], ["1 partitions"]):
        # named, or counted as never started when no run of it took its lease (no record to name)
        found.append(f"{where}: failed without naming partition 0: {entry.error}")
    _redrive(tick)
    tick.drain()
    found.extend(f"{where}: {problem}" for problem in problems(tick.state(), reference_run(tick)))
    return found


def test_a_death_on_the_last_receive_with_its_watch_lost_is_settled_by_the_reaper_then_redriven(
    tick: FannedOutTick,
) -> None:
    reference_run(tick)
    reaped_as: list[str] = []
    assert _reaped_without_watches(tick, len(BEFORE_THE_RUN) + 2, reaped_as) == []
    status, error = reaped_as
    assert status == "failed"
    assert error.startswith("partition 0 not done by the tick's bound")
    assert _entry(tick).status == "succeeded"  # the redrive's done settled it again


@pytest.mark.slow
def test_a_death_after_any_request_with_every_watch_lost_leaves_no_tick_started_once_reaped(
    tick: FannedOutTick,
) -> None:
    reference = reference_run(tick)
    clean = len(reference.last_requests) + 1
    failures: list[str] = []
    for request in range(1, clean + 1):
        failures.extend(_reaped_without_watches(tick, request))
    assert not failures, "\n".join(failures)
