"""A worker that dies on its partition message's last receive still settles the tick: its watch,
delayed past the attempt's end, names the partition on the tick, which ends `failed`; a redrive
after the fix makes it `succeeded`. A watch over a run that ended by itself changes nothing, one
that comes while the run may live watches again, and a duplicate settles nothing twice."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
import time_machine
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout.keys import partition_key, tick_key
from clockless.fanout.messages import KIND_WATCH, MalformedMessageError, WorkMessage
from clockless.fanout.store import PartitionStore, now_ms
from clockless.fanout.watch import WATCH_MARGIN_SECONDS, wait_for_last_receive_ms, watch_delay_seconds
from clockless.ledger import LedgerEntry
from clockless.state import PartitionRecord, PartitionStatus, Verdict, judge, watches
from clockless.tick import Trigger
from clockless_tools.simulate.faults import AttemptDied
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import BUSINESS_DATE, TOY_JOB, Context, ToyWork, drain, seed, sqs_event, toy_job

SCHEDULED: Final = f"{BUSINESS_DATE}T02:00:00Z"
TICK: Final = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}
# The worker's Timeout: what a run has left when it starts.
TIMEOUT_S: Final = 300
LAST_RECEIVE: Final = "5"
# The partition record as a watch reads it.
Seen: Final = PartitionRecord


class DyingWork(ToyWork):
    """Partition 0's run is killed while it reads (its Lambda timeout, a crash): nothing runs after."""

    def read(self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int) -> Any:
        if partition == "0":
            raise AttemptDied("killed at its timeout")
        return super().read(partition, params, cursor, limit)


class UnreadableShard(ToyWork):
    def read(self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int) -> Any:
        if partition == "0":
            raise ConnectionError("shard 0 unreachable")
        return super().read(partition, params, cursor, limit)


@pytest.fixture
def clock() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(datetime(2026, 12, 1, 2, 0, 20, tzinfo=UTC), tick=False) as traveller:
        yield traveller


def _entry(aws: Aws) -> LedgerEntry:
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED), ConsistentRead=True)
    return LedgerEntry.from_item(item["Item"])


def _record(aws: Aws, partition: str = "0") -> dict[str, Any]:
    key = partition_key(TOY_JOB, SCHEDULED, partition)
    return dict(aws.dynamodb.get_item(TableName="LedgerTable", Key=key, ConsistentRead=True)["Item"])


def _queued(aws: Aws) -> dict[str, int]:
    names = {"visible": "", "NotVisible": "NotVisible", "Delayed": "Delayed"}
    asked = [f"ApproximateNumberOfMessages{suffix}" for suffix in names.values()]
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.work_queue, AttributeNames=asked)["Attributes"]
    return {name: int(attributes[f"ApproximateNumberOfMessages{suffix}"]) for name, suffix in names.items()}


def _receive(aws: Aws, visibility: int = 1800) -> list[dict[str, Any]]:
    response = aws.sqs.receive_message(
        QueueUrl=aws.work_queue, MaxNumberOfMessages=10, VisibilityTimeout=visibility, AttributeNames=["All"]
    )
    return list(response.get("Messages") or [])


def _started_with_partition_0_held(aws: Aws, items: int = 12) -> tuple[Any, Any, dict[str, Any]]:
    """The tick fanned out, every partition but 0 done; partition 0's message received (and held
    for the visibility timeout), as on its last receive. (work, healthy worker, that message)"""
    seed(aws.dynamodb, items)
    _, work, coordinator, healthy = toy_job()
    coordinator(dict(TICK), Context())
    messages = _receive(aws)
    (stuck,) = [m for m in messages if json.loads(m["Body"])["partition"] == "0"]
    for message in messages:
        if message is not stuck:
            assert not healthy(sqs_event([message]), Context())["batchItemFailures"]
            aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=message["ReceiptHandle"])
    stuck["Attributes"]["ApproximateReceiveCount"] = LAST_RECEIVE
    return work, healthy, stuck


def test_the_watch_comes_ten_seconds_after_the_attempt_can_end() -> None:
    assert WATCH_MARGIN_SECONDS == 10
    assert [watch_delay_seconds(s) for s in (300, 0.2, 0, -1)] == [310, 11, 10, 10]


def test_a_worker_killed_on_its_last_receive_fails_its_tick_by_name_and_a_redrive_settles_it(
    aws: Aws, clock: time_machine.Traveller
) -> None:
    work, healthy, stuck = _started_with_partition_0_held(aws)
    dying = work.worker(lambda: DyingWork(aws.dynamodb))

    with pytest.raises(AttemptDied):
        dying(sqs_event([stuck]), Context(remaining_ms=TIMEOUT_S * 1000))

    # Nothing ran after the death: the tick is started, the lease held, and a watch is delayed.
    assert _entry(aws).status == "started"
    assert int(_record(aws)["lease_until"]["N"]) > 0
    assert _queued(aws) == {"visible": 0, "NotVisible": 1, "Delayed": 1}

    # Its message, held 1,800 s by the poller, is back when the attempt is over plus 10 s (SQS
    # would move it to the work DLQ then), and so is the watch.
    clock.shift(timedelta(seconds=TIMEOUT_S + WATCH_MARGIN_SECONDS - 1))
    assert _queued(aws)["visible"] == 0
    clock.shift(timedelta(seconds=2))
    back = {json.loads(m["Body"])["kind"]: m for m in _receive(aws, visibility=0)}
    assert sorted(back) == ["partition", "watch"]
    assert json.loads(back["watch"]["Body"])["watched"] == _record(aws)["lease_owner"]["S"]
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=back["partition"]["ReceiptHandle"])  # to the DLQ

    assert drain(aws.sqs, aws.work_queue, healthy).outcomes == ["ok"]

    entry = _entry(aws)
    assert entry.status == "failed"
    assert str(entry.error).startswith("partition 0 failed every receive: replay them after the fix")
    assert [(f.key, f.reason) for f in entry.failures] == [("partition 0", "partition")]

    # `clockless work redrive` sends the partition message back; the fixed worker runs it.
    aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody=stuck["Body"])
    assert drain(aws.sqs, aws.work_queue, healthy).outcomes == ["ok"]

    entry = _entry(aws)
    assert (entry.status, entry.error, entry.failures) == ("succeeded", None, ())
    assert entry.summary is not None
    assert entry.summary["applied"] == 12


def test_a_watch_delivered_twice_settles_the_tick_once(
    aws: Aws, clock: time_machine.Traveller, capsys: pytest.CaptureFixture[str]
) -> None:
    work, healthy, stuck = _started_with_partition_0_held(aws)
    with pytest.raises(AttemptDied):
        work.worker(lambda: DyingWork(aws.dynamodb))(sqs_event([stuck]), Context())
    clock.shift(timedelta(seconds=TIMEOUT_S + WATCH_MARGIN_SECONDS))
    (watch,) = [m for m in _receive(aws, visibility=0) if json.loads(m["Body"])["kind"] == KIND_WATCH]
    capsys.readouterr()

    for _ in range(2):
        assert not healthy(sqs_event([watch]), Context())["batchItemFailures"]

    entry = _entry(aws)
    assert (entry.status, [f.key for f in entry.failures]) == ("failed", ["partition 0"])
    assert capsys.readouterr().out.count('"TickFailed":[1.0]') == 1


def test_a_watch_that_comes_while_the_run_may_live_watches_again(aws: Aws, clock: time_machine.Traveller) -> None:
    work, healthy, stuck = _started_with_partition_0_held(aws)
    with pytest.raises(AttemptDied):
        work.worker(lambda: DyingWork(aws.dynamodb))(sqs_event([stuck]), Context())
    owner = _record(aws)["lease_owner"]["S"]
    early = WorkMessage.parse(stuck["Body"], job=TOY_JOB, partitions=["0", "1", "2", "3"])
    body = json.dumps({**json.loads(early.body()), "kind": KIND_WATCH, "watched": owner})
    # A minute later the attempt may still run (its lease has 240 s left).
    clock.shift(timedelta(seconds=60))

    assert not healthy(sqs_event([{"MessageId": "w", "ReceiptHandle": "w", "Body": body}]), Context())[
        "batchItemFailures"
    ]

    assert _entry(aws).status == "started"
    assert (
        "partitions_exhausted"
        not in aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"]
    )
    # Watched again, once the lease's 240 s are over (plus the margin): 2 watches now delayed.
    assert _queued(aws)["Delayed"] == 2
    clock.shift(timedelta(seconds=240 + WATCH_MARGIN_SECONDS))
    assert [json.loads(m["Body"])["kind"] for m in _receive(aws, visibility=0)].count(KIND_WATCH) == 2


@pytest.mark.parametrize("ending", ["done", "raised", "handed on"])
def test_a_watch_over_a_run_that_ended_by_itself_changes_nothing(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    if ending == "handed on":
        monkeypatch.setenv("WORK_PAGE_SIZE", "1")
    work, healthy, stuck = _started_with_partition_0_held(aws)
    worker = work.worker(lambda: UnreadableShard(aws.dynamodb)) if ending == "raised" else healthy
    # 20 s left, under the 30 s budget: a partition of several pages hands on after its first.
    context = Context(remaining_ms=20_000 if ending == "handed on" else TIMEOUT_S * 1000)

    if ending == "raised":
        with pytest.raises(BatchProcessingError):
            worker(sqs_event([stuck]), context)
    else:
        assert not worker(sqs_event([stuck]), context)["batchItemFailures"]
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=stuck["ReceiptHandle"])
    before = _entry(aws)
    clock.shift(timedelta(minutes=10))

    drained = drain(aws.sqs, aws.work_queue, healthy)

    after = _entry(aws)
    assert drained.errors == []
    if ending == "handed on":  # the continuations finished it; the watch added nothing
        assert (before.status, after.status, after.failures) == ("started", "succeeded", ())
    else:
        assert (after.status, after.error, after.failures) == (before.status, before.error, before.failures)
        assert after.status == ("succeeded" if ending == "done" else "failed")


def test_a_watch_over_a_tick_no_coordinator_claimed_is_refused_and_writes_nothing(
    aws: Aws, clock: time_machine.Traveller
) -> None:
    # Given a partition record whose run died (its lease expired), for a tick the ledger never saw
    _, _, _, worker = toy_job()
    dead = PartitionStore(aws.dynamodb, "LedgerTable", TOY_JOB, SCHEDULED, "1", "a-dead-run", 86400)
    assert dead.acquire(lease_until_ms=now_ms() - 1, hop=0).acquired
    body = {"kind": KIND_WATCH, "job": TOY_JOB, "scheduled_time": SCHEDULED, "partition": "1", "params": {}}
    watched = {"watched": "a-dead-run", "receives": int(LAST_RECEIVE)}
    event = sqs_event([{"MessageId": "w", "ReceiptHandle": "w", "Body": json.dumps(body | watched)}])

    with pytest.raises(BatchProcessingError) as refused:
        worker(event, Context())

    assert "no fan-out coordinator claimed" in str(refused.value.child_exceptions[0][1])
    assert "Item" not in aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))


def test_a_watch_whose_finisher_stays_throttled_comes_back_itself_not_as_a_partition_run(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clockless.fanout.finisher import Finisher
    from clockless.throttle import BudgetSpent

    work, healthy, stuck = _started_with_partition_0_held(aws)
    with pytest.raises(AttemptDied):
        work.worker(lambda: DyingWork(aws.dynamodb))(sqs_event([stuck]), Context())
    clock.shift(timedelta(seconds=TIMEOUT_S + WATCH_MARGIN_SECONDS))
    (watch,) = [m for m in _receive(aws, visibility=0) if json.loads(m["Body"])["kind"] == KIND_WATCH]
    real = Finisher.finish
    throttled = [ConnectionError("ThrottlingException")]

    def once_throttled(self: Finisher, *args: Any, **kwargs: Any) -> Any:
        if throttled:
            raise BudgetSpent("the finish", throttled.pop(), waited_s=270.0)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Finisher, "finish", once_throttled)
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=watch["ReceiptHandle"])

    assert not healthy(sqs_event([watch]), Context())["batchItemFailures"]

    assert _entry(aws).status == "started"  # named, not yet settled
    clock.shift(timedelta(seconds=61))
    again = _receive(aws, visibility=0)
    for message in again:  # the partition message, back from its bounded visibility: to the DLQ
        if json.loads(message["Body"])["kind"] == "partition":
            aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=message["ReceiptHandle"])
    bodies = [json.loads(m["Body"]) for m in again]
    assert [(body["kind"], body.get("watched")) for body in bodies if body["kind"] != "partition"] == [
        (KIND_WATCH, json.loads(watch["Body"])["watched"])
    ]
    assert drain(aws.sqs, aws.work_queue, healthy).errors == []
    assert (_entry(aws).status, [f.key for f in _entry(aws).failures]) == ("failed", ["partition 0"])


# ------------------------------------------------------------------------------------------ the verdict
OWNER: Final = "the-watched-run"
NOW: Final = 1_000_000


def _watch(receives: int, *, hop: int = 0, until_ms: int = 0, seen_owner: str = "") -> WorkMessage:
    return WorkMessage(
        KIND_WATCH,
        TOY_JOB,
        datetime(2026, 12, 1, 2, tzinfo=UTC),
        Trigger.SCHEDULE,
        "0",
        {},
        hop,
        watched=OWNER,
        message_id="m-1",
        receives=receives,
        seen_owner=seen_owner,
        until_ms=until_ms,
    )


@pytest.mark.parametrize(
    ("receives", "record", "verdict"),
    [
        # the last receive
        (5, Seen(), Verdict.DEAD),  # it died before its lease, on a partition never run
        (
            5,
            PartitionRecord(True, lease_owner="receive-4", lease_until=NOW - 1, message_id="m-1"),
            Verdict.DEAD,
        ),  # before its lease
        (
            5,
            PartitionRecord(True, lease_owner=OWNER, lease_until=NOW - 1, message_id="m-1"),
            Verdict.DEAD,
        ),  # holding its lease
        (
            5,
            PartitionRecord(True, lease_owner=OWNER, lease_until=0, message_id="m-1"),
            Verdict.ENDED,
        ),  # released: handed on, named
        (
            5,
            PartitionRecord(True, hops=0, lease_owner="hop-0", lease_until=0, message_id="m-0"),
            Verdict.ENDED,
        ),  # another copy
        (5, Seen(True, status=PartitionStatus.DONE, lease_owner=OWNER, message_id="m-1"), Verdict.ENDED),
        (
            5,
            PartitionRecord(True, hops=1, lease_owner="next-hop", lease_until=0, message_id="m-2"),
            Verdict.ENDED,
        ),  # moved on
        (5, Seen(True, lease_owner="a-duplicate", lease_until=NOW + 5, message_id="m-9"), Verdict.LIVE),
        (
            5,
            PartitionRecord(True, lease_owner=OWNER, lease_until=NOW + 5, message_id="m-1"),
            Verdict.LIVE,
        ),  # came early
        (
            5,
            PartitionRecord(True, lease_owner=OWNER, lease_until=NOW - 1, message_id=""),
            Verdict.DEAD,
        ),  # a record of before
        # the receive before the last: wait for the last, which no worker may see
        (4, Seen(True, lease_owner=OWNER, lease_until=NOW - 1, message_id="m-1"), Verdict.WAIT),
        (4, Seen(True, lease_owner=OWNER, lease_until=0, message_id="m-1"), Verdict.WAIT),
        (4, Seen(True, status=PartitionStatus.DONE, lease_owner=OWNER, message_id="m-1"), Verdict.ENDED),
    ],
    ids=str,
)
def test_a_watch_judges_the_partition_record(receives: int, record: PartitionRecord, verdict: Verdict) -> None:
    assert judge(_watch(receives), record, now=NOW, max_receives=int(LAST_RECEIVE)) is verdict


@pytest.mark.parametrize(
    ("record", "now", "verdict"),
    [
        (Seen(True, lease_owner=OWNER, lease_until=NOW - 1, message_id="m-1"), NOW, Verdict.WAIT),  # not yet
        (
            PartitionRecord(True, lease_owner=OWNER, lease_until=NOW - 1, message_id="m-1"),
            NOW + 10,
            Verdict.DEAD,
        ),  # no one came
        (
            PartitionRecord(True, lease_owner="receive-5", lease_until=0, message_id="m-1"),
            NOW + 10,
            Verdict.ENDED,
        ),  # one came
        (
            PartitionRecord(True, lease_owner="receive-5", lease_until=NOW - 1, message_id="m-1"),
            NOW,
            Verdict.DEAD,
        ),  # and died
        (
            PartitionRecord(True, lease_owner="receive-5", lease_until=NOW + 60, message_id="m-1"),
            NOW + 10,
            Verdict.LIVE,
        ),
    ],
    ids=str,
)
def test_a_waiting_watch_judges_whether_a_later_receive_reached_a_worker(
    record: PartitionRecord, now: int, verdict: Verdict
) -> None:
    waiting = _watch(4, until_ms=NOW + 10, seen_owner=OWNER)
    assert judge(waiting, record, now=now, max_receives=int(LAST_RECEIVE)) is verdict


def test_a_watch_waits_out_the_backoff_the_visibility_timeout_and_the_count_lag() -> None:
    # a failure on the 4th receive is shown again after 80 s; the 5th, if no worker sees it, hides it 1,800 s
    assert wait_for_last_receive_ms(4, 1800) == 1000 * (80 + 1800 + 60)


def test_the_last_two_receives_are_watched() -> None:
    assert [receives for receives in range(1, 7) if watches(receives, 5)] == [4, 5, 6]


def test_a_watch_message_round_trips_its_waiting_state() -> None:
    waiting = _watch(4, hop=3, until_ms=NOW, seen_owner=OWNER)
    assert WorkMessage.parse(waiting.body(), job=TOY_JOB, partitions=["0"]) == waiting


@pytest.mark.parametrize(
    ("field", "value"), [("receives", -1), ("receives", "5"), ("until_ms", 10**14), ("seen_owner", 7)], ids=str
)
def test_a_watch_with_a_bad_field_is_refused_naming_it(field: str, value: Any) -> None:
    body = json.loads(_watch(5).body()) | {field: value}
    with pytest.raises(MalformedMessageError, match=f"field '{field}'"):
        WorkMessage.parse(json.dumps(body), job=TOY_JOB, partitions=["0"])


def test_a_waiting_watch_past_its_deadline_waits_on_while_messages_wait_on_the_queue(
    aws: Aws, clock: time_machine.Traveller
) -> None:
    # Given partition 0 last leased by a run of its 4th receive that died, and the watch of that
    # receive past its deadline, no run having leased the partition since
    _, healthy, stuck = _started_with_partition_0_held(aws)
    dead = PartitionStore(aws.dynamodb, "LedgerTable", TOY_JOB, SCHEDULED, "0", "receive-4", 86400)
    assert dead.acquire(lease_until_ms=now_ms() - 1, hop=0, message_id=stuck["MessageId"]).acquired
    waiting = dataclasses.replace(
        WorkMessage.parse(stuck["Body"], job=TOY_JOB, partitions=["0", "1", "2", "3"]),
        kind=KIND_WATCH,
        watched="receive-4",
        message_id=stuck["MessageId"],
        receives=int(LAST_RECEIVE) - 1,
        seen_owner="receive-4",
        until_ms=now_ms() - 1,
    )
    # and a backlog on the work queue, where the partition message may still wait
    aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody="a message waiting for a worker")
    delivery = {"MessageId": "w", "ReceiptHandle": "w", "Body": waiting.body()}

    assert not healthy(sqs_event([delivery]), Context())["batchItemFailures"]

    # Then the watch waits a minute more (SQS's counts lag), naming nothing
    assert _entry(aws).status == "started"
    assert _queued(aws)["Delayed"] == 1
    # When the backlog is gone
    (backlog,) = [m for m in _receive(aws, visibility=0) if m["Body"] == "a message waiting for a worker"]
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=backlog["ReceiptHandle"])
    clock.shift(timedelta(seconds=61))
    (again,) = _receive(aws, visibility=0)
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=again["ReceiptHandle"])

    assert not healthy(sqs_event([again]), Context())["batchItemFailures"]

    # Then the partition is named dead and the tick settles failed
    entry = _entry(aws)
    assert (entry.status, [f.key for f in entry.failures]) == ("failed", ["partition 0"])


def test_a_continuation_that_never_took_its_lease_is_dead_on_its_last_receive() -> None:
    # the record is hop 0's (which handed on); the watched message, hop 1, never leased it
    record = PartitionRecord(True, hops=0, lease_owner="hop-0", lease_until=0, message_id="m-0")
    assert judge(_watch(5, hop=1), record, now=NOW, max_receives=int(LAST_RECEIVE)) is Verdict.DEAD
