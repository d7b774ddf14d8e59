"""The tick reaper (clockless.reaper) against the toy's real coordinator and worker on moto: every
way a fanned-out tick is left unsettled by a death or a receive no worker sees (nothing of the kit
runs after it: only the work DLQ would speak for it), double faults included, is settled `failed`
once its bound has passed, naming the partitions not done; a partition that goes on (a redrive, a
run still leased) still applies each item once, and its late `done` settles the tick again
truthfully."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
import time_machine

from clockless.fanout.coordinator import FanOut
from clockless.fanout.keys import partition_key, tick_key
from clockless.fanout.tick_store import TickStore
from clockless.items import load_listed
from clockless.reaper import (
    CHANGED,
    SETTLED,
    NotDone,
    OpenTick,
    PartitionState,
    ReapedJob,
    ReapedJobsError,
    StuckTicks,
    parse_reaped_jobs,
    reap,
)
from clockless_tools.simulate.faults import AttemptDied
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    OUTPUTS_TABLE,
    TOY_JOB,
    Context,
    ToyWork,
    drain,
    seed,
    sqs_event,
    toy_job,
)
from tick_reaper.handler import JOB_NAME, lambda_handler

FIRST: Final = f"{BUSINESS_DATE}T02:00:00Z"
SECOND: Final = f"{BUSINESS_DATE}T03:00:00Z"
STARTED_AT: Final = datetime(2026, 12, 1, 3, 0, 5, tzinfo=UTC)
BOUND: Final = timedelta(minutes=10)
JOBS: Final = (ReapedJob(TOY_JOB, BOUND),)
LOOKBACK: Final = timedelta(hours=48)
ITEMS: Final = 8


@pytest.fixture
def clock() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(STARTED_AT, tick=False) as traveller:
        yield traveller


def _now() -> datetime:
    return datetime.fromtimestamp(time.time(), UTC)


def _entry(aws: Aws, scheduled_time: str) -> dict[str, Any]:
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, scheduled_time), ConsistentRead=True)
    return {name: next(iter(value.values())) for name, value in (item.get("Item") or {}).items()}


def _reap(aws: Aws, now: datetime) -> list[Any]:
    return reap(StuckTicks(aws.dynamodb, "LedgerTable"), JOBS, now=now, lookback=LOOKBACK)


def _messages(aws: Aws) -> list[dict[str, Any]]:
    """Every message on the work queue, taken off it (the poller holds them)."""
    taken = []
    while polled := aws.sqs.receive_message(
        QueueUrl=aws.work_queue, MaxNumberOfMessages=10, VisibilityTimeout=1800
    ).get("Messages"):
        taken.extend(polled)
    return taken


def _dies(*args: Any, **kwargs: Any) -> Any:
    raise AttemptDied("killed at its timeout")


def _fanned_out(aws: Aws) -> tuple[Any, dict[str, dict[str, Any]]]:
    """SECOND fanned out over its 4 partitions; (the worker, its messages by partition, taken off
    the queue: the test decides what becomes of each)."""
    seed(aws.dynamodb, ITEMS)
    _, _, coordinator, worker = toy_job()
    coordinator({"job": TOY_JOB, "scheduled_time": SECOND, "attempt": "1", "trigger": "schedule"}, Context())
    return worker, {json.loads(m["Body"])["partition"]: m for m in _messages(aws)}


def _run(aws: Aws, worker: Any, message: dict[str, Any], *, receives: int = 1) -> None:
    message = {**message, "Attributes": {"ApproximateReceiveCount": str(receives)}}
    assert not worker(sqs_event([message]), Context())["batchItemFailures"]


def _die(worker: Any, message: dict[str, Any], monkeypatch: pytest.MonkeyPatch, *, receives: int) -> None:
    """The run of `message` dies after taking its lease and before its first write (its timeout,
    a crash): nothing of it runs after."""
    message = {**message, "Attributes": {"ApproximateReceiveCount": str(receives)}}
    with monkeypatch.context() as dying:
        dying.setattr(ToyWork, "writes", _dies)
        with pytest.raises(AttemptDied):
            worker(sqs_event([message]), Context())


def _redrive(aws: Aws, worker: Any, *bodies: str) -> None:
    """`clockless work redrive`: the messages back on the work queue, and the workers drain it."""
    for body in bodies:
        aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody=body)
    assert drain(aws.sqs, aws.work_queue, worker).errors == []


def _applied_once(aws: Aws) -> None:
    outputs = aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"]
    assert len(outputs) == ITEMS
    summary = json.loads(_entry(aws, SECOND)["summary"])
    assert summary["applied"] == ITEMS, summary


def test_reaped_jobs_are_read_from_one_line_and_bad_input_is_named() -> None:
    assert parse_reaped_jobs("a=58, b=135") == (
        ReapedJob("a", timedelta(minutes=58)),
        ReapedJob("b", timedelta(hours=2, minutes=15)),
    )
    for bad in ("a", "a=", "a=0", "a=x", "=5", "a=5,a=6"):
        with pytest.raises(ReapedJobsError, match="REAPED_JOBS"):
            parse_reaped_jobs(bad)


@pytest.mark.parametrize(
    ("entry", "now", "stuck"),
    [
        ({"status": "started", "partitions_total": "4", "partitions_done": "3"}, STARTED_AT + BOUND, True),
        ({"status": "started", "partitions_total": "4"}, STARTED_AT + BOUND, True),
        ({"status": "started", "partitions_total": "4"}, STARTED_AT + BOUND - timedelta(seconds=1), False),
        # complete, its finisher never run after the last partition: the finisher's to settle, here
        ({"status": "started", "partitions_total": "4", "partitions_done": "4"}, STARTED_AT + BOUND, True),
        ({"status": "started"}, STARTED_AT + BOUND, False),  # not a fan-out claim: its own attempt settles it
        ({"status": "started", "partitions_total": "4", "claim_id": None}, STARTED_AT + BOUND, False),  # unclaimed
        ({"status": "buffered", "overlap_with": FIRST}, STARTED_AT + BOUND, True),
        ({"status": "succeeded", "partitions_total": "4"}, STARTED_AT + BOUND, False),
        ({"status": "failed", "partitions_total": "4"}, STARTED_AT + BOUND, False),
    ],
    ids=str,
)
def test_a_tick_is_stuck_past_its_bound_while_open(entry: dict[str, str | None], now: datetime, stuck: bool) -> None:
    fields: dict[str, str | None] = {
        "job": TOY_JOB,
        "scheduled_time": SECOND,
        "started_at": "2026-12-01T03:00:05Z",
        "claim_id": "c-1",
        **entry,
    }
    item = {name: {"S": value} for name, value in fields.items() if value is not None}
    assert OpenTick.from_item(item).stuck(BOUND, now) is stuck


def test_the_bound_runs_from_a_late_start_not_only_the_scheduled_time() -> None:
    late = OpenTick(TOY_JOB, SECOND, "started", started_at="2026-12-02T09:00:00Z", partitions_total=4)
    assert late.due(BOUND) == datetime(2026, 12, 2, 9, 10, tzinfo=UTC)
    assert OpenTick(TOY_JOB, SECOND, "buffered", overlap_with=FIRST).due(BOUND) == datetime(
        2026, 12, 1, 3, 10, tzinfo=UTC
    )


def test_partitions_not_done_are_named_with_their_state_and_the_never_started_counted() -> None:
    now = datetime(2026, 12, 1, 4, tzinfo=UTC)
    records = [
        PartitionState("0", done=True),
        PartitionState("2", done=False, lease_until_ms=int(now.timestamp() * 1000) + 1, receives=2),
        PartitionState("1", done=False, receives=5, last_error="RuntimeError: boom"),
    ]
    not_done = NotDone.of(OpenTick(TOY_JOB, SECOND, "started", partitions_total=4), records)
    assert [p.name for p in not_done.partitions] == ["1", "2"]
    assert not_done.never_started == 1
    failures = not_done.failures(now)
    assert [f.key for f in failures] == ["partition 1", "partition 2", "1 partitions"]
    assert "no run holds it" in failures[0].message
    assert "RuntimeError: boom" in failures[0].message
    assert "still leased" in failures[1].message
    assert not_done.error(TOY_JOB).startswith("partition 1, 2 not done; 1 partitions never started by the tick's bound")


def test_a_run_dying_on_its_last_receive_is_settled_and_redriven(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, messages = _fanned_out(aws)
    for partition in ("0", "1", "2"):
        _run(aws, worker, messages[partition])
    _die(worker, messages["3"], monkeypatch, receives=5)
    _messages(aws)  # the poller holds it, then moves it to the work DLQ: nothing on the queue for the tick

    clock.shift(BOUND - timedelta(seconds=1))
    assert _reap(aws, _now()) == []  # before its bound (its claim's time + BOUND): left alone
    clock.shift(timedelta(seconds=1))
    (reaped,) = _reap(aws, _now())

    assert (reaped.outcome, reaped.was, reaped.not_done) == (SETTLED, "started", ("3",))
    entry = _entry(aws, SECOND)
    assert entry["status"] == "failed"
    assert entry["error"].startswith("partition 3 not done by the tick's bound")
    assert [f.key for f in load_listed(entry["failures"])] == ["partition 3"]
    assert _reap(aws, _now()) == []  # a duplicate reaper tick: nothing open

    _redrive(aws, worker, messages["3"]["Body"])  # from the work DLQ, after the fix
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["partitions_done"], entry.get("error"), entry.get("failures")) == (
        "succeeded",
        "4",
        None,
        None,
    )
    assert "reaped_at" in entry  # the ledger keeps that it was reaped before it succeeded
    _applied_once(aws)


def test_two_partitions_reaped_then_redriven_one_by_one_leave_a_truthful_ledger_each_time(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, messages = _fanned_out(aws)
    for partition in ("0", "1"):
        _run(aws, worker, messages[partition])
    for partition in ("2", "3"):
        _die(worker, messages[partition], monkeypatch, receives=5)
    clock.shift(BOUND)
    _messages(aws)  # shown again after their attempts: the poller's next receive moves both to the work DLQ
    (reaped,) = _reap(aws, _now())
    assert (reaped.outcome, reaped.not_done) == (SETTLED, ("2", "3"))
    assert _entry(aws, SECOND)["partitions_exhausted"] == ["2", "3"]  # named as a last receive names its own

    _redrive(aws, worker, messages["2"]["Body"])  # one of them fixed and redriven: the other still named
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["partitions_done"], entry["partitions_exhausted"]) == ("failed", "3", ["3"])
    assert entry["error"].startswith("partition 3 failed every receive or its tick's bound")
    assert [f.key for f in load_listed(entry["failures"])] == ["partition 3"]

    _redrive(aws, worker, messages["3"]["Body"])
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["partitions_done"], "partitions_exhausted" in entry) == ("succeeded", "4", False)
    _applied_once(aws)


def test_a_receive_that_never_reaches_a_worker_is_settled_as_a_partition_never_started(
    aws: Aws, clock: time_machine.Traveller
) -> None:
    worker, messages = _fanned_out(aws)
    for partition in ("0", "2", "3"):
        _run(aws, worker, messages[partition])
    # Partition 1's message: its receives before the last two never reached a worker (init
    # failures), and its last two neither; SQS moved it to the work DLQ.

    clock.shift(BOUND)
    (reaped,) = _reap(aws, _now())

    assert (reaped.outcome, reaped.not_done) == (SETTLED, ())
    entry = _entry(aws, SECOND)
    assert entry["status"] == "failed"
    assert entry["error"].startswith("1 partitions never started by the tick's bound")
    assert json.loads(entry["summary"]) == {"partitions": 4, "partitions_not_done": 1}

    _redrive(aws, worker, messages["1"]["Body"])
    assert _entry(aws, SECOND)["status"] == "succeeded"
    _applied_once(aws)


def test_a_partition_still_leased_past_the_bound_is_named_untouched_and_its_late_done_settles_the_tick_again(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, messages = _fanned_out(aws)
    for partition in ("0", "1", "2"):
        _run(aws, worker, messages[partition])
    _die(worker, messages["3"], monkeypatch, receives=1)  # its lease runs to its attempt's end
    record_key = partition_key(TOY_JOB, SECOND, "3")
    before = aws.dynamodb.get_item(TableName="LedgerTable", Key=record_key, ConsistentRead=True)["Item"]
    assert int(before["lease_until"]["N"]) > (STARTED_AT + timedelta(seconds=1)).timestamp() * 1000

    short = (ReapedJob(TOY_JOB, timedelta(seconds=1)),)
    now = STARTED_AT + timedelta(seconds=2)
    clock.move_to(now)
    (reaped,) = reap(StuckTicks(aws.dynamodb, "LedgerTable"), short, now=now, lookback=LOOKBACK)

    assert (reaped.outcome, reaped.not_done) == (SETTLED, ("3",))
    assert "still leased by a run" in load_listed(_entry(aws, SECOND)["failures"])[0].message
    after = aws.dynamodb.get_item(TableName="LedgerTable", Key=record_key, ConsistentRead=True)["Item"]
    assert after == before  # the reaper writes no partition record: the lease, cursor and counters stand

    clock.shift(timedelta(seconds=400))  # the dead run's lease is over: its message comes back
    _run(aws, worker, messages["3"], receives=2)
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["partitions_done"]) == ("succeeded", "4")
    _applied_once(aws)


def test_a_partition_done_between_the_reapers_read_and_write_leaves_the_tick_to_the_finisher(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, messages = _fanned_out(aws)
    for partition in ("0", "1"):
        _run(aws, worker, messages[partition])
    clock.shift(BOUND)

    class Racing(StuckTicks):
        def partitions(self, tick: OpenTick) -> list[PartitionState]:
            read = super().partitions(tick)
            _run(aws, worker, messages["2"])  # done meanwhile: partitions_done moves on
            return read

    (reaped,) = reap(Racing(aws.dynamodb, "LedgerTable"), JOBS, now=_now(), lookback=LOOKBACK)
    assert reaped.outcome == CHANGED
    assert _entry(aws, SECOND)["status"] == "started"
    (again,) = _reap(aws, _now())  # the next reaper tick
    assert (again.outcome, again.not_done) == (SETTLED, ())
    assert _entry(aws, SECOND)["error"].startswith("1 partitions never started")


class LostAnswer:
    """A DynamoDB client whose UpdateItem is applied, its answer lost, and sent again (botocore)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.exceptions = real.exceptions

    def update_item(self, **request: Any) -> Any:
        self.real.update_item(**request)
        return self.real.update_item(**request)


def test_a_settling_write_whose_answer_was_lost_still_says_it_settled(aws: Aws) -> None:
    aws.dynamodb.put_item(
        TableName="LedgerTable",
        Item={
            **tick_key(TOY_JOB, SECOND),
            "status": {"S": "started"},
            "claim_id": {"S": "c-1"},
            "partitions_total": {"N": "4"},
        },
    )
    tick = OpenTick(TOY_JOB, SECOND, "started", claim_id="c-1", partitions_total=4)
    store = StuckTicks(LostAnswer(aws.dynamodb), "LedgerTable")
    assert store.fail_started(tick, NotDone((), 4), STARTED_AT) is True
    assert store.fail_started(tick, NotDone((), 4), STARTED_AT) is False  # a duplicate reaper's is not
    assert _entry(aws, SECOND)["status"] == "failed"


def _first_done_second_start_held(aws: Aws) -> tuple[Any, dict[str, Any]]:
    """FIRST run to its end with SECOND buffered behind it; SECOND's start message held by the poller."""
    seed(aws.dynamodb, ITEMS)
    _, _, coordinator, worker = toy_job(overlap="buffer")
    coordinator({"job": TOY_JOB, "scheduled_time": FIRST, "attempt": "1", "trigger": "schedule"}, Context())
    coordinator({"job": TOY_JOB, "scheduled_time": SECOND, "attempt": "1", "trigger": "schedule"}, Context())
    start = None
    while polled := aws.sqs.receive_message(QueueUrl=aws.work_queue, MaxNumberOfMessages=1, VisibilityTimeout=1800):
        if "Messages" not in polled:
            break
        (message,) = polled["Messages"]
        if json.loads(message["Body"])["kind"] == "start":
            start = message
            continue
        assert not worker(sqs_event([message]), Context())["batchItemFailures"]
        aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=message["ReceiptHandle"])
    assert start is not None
    assert (_entry(aws, FIRST)["status"], _entry(aws, SECOND)["status"]) == ("succeeded", "buffered")
    start["Attributes"] = {"ApproximateReceiveCount": "5"}
    return worker, start


def test_a_buffered_tick_whose_start_died_before_its_claim_is_settled_and_a_redrive_starts_it(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, start = _first_done_second_start_held(aws)
    with monkeypatch.context() as dying:
        dying.setattr(TickStore, "release_buffered", _dies)
        with pytest.raises(AttemptDied):
            worker(sqs_event([start]), Context())
    _messages(aws)  # on to the work DLQ

    clock.shift(BOUND)
    (reaped,) = _reap(aws, _now())

    assert (reaped.outcome, reaped.was) == (SETTLED, "buffered")
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["start_failed"]) == ("failed", FIRST)
    assert entry["error"].startswith(f"buffered behind {FIRST}, it never started by its bound")
    _redrive(aws, worker, start["Body"])
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry.get("start_failed"), entry.get("error")) == ("succeeded", None, None)


def test_a_buffered_tick_whose_start_died_between_its_claim_and_its_sends_is_settled_and_a_redrive_runs_it(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, start = _first_done_second_start_held(aws)
    with monkeypatch.context() as dying:
        dying.setattr(FanOut, "start", _dies)
        with pytest.raises(AttemptDied):
            worker(sqs_event([start]), Context())
    _messages(aws)
    assert _entry(aws, SECOND)["status"] == "started"  # claimed, and no partition sent

    clock.shift(BOUND)
    (reaped,) = _reap(aws, _now())

    assert (reaped.outcome, reaped.was) == (SETTLED, "started")
    assert _entry(aws, SECOND)["error"].startswith("4 partitions never started")
    _redrive(aws, worker, start["Body"])
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["partitions_done"]) == ("succeeded", "4")


def test_the_tick_reaper_job_settles_as_of_its_own_tick_and_counts_each_under_its_job(
    aws: Aws,
    clock: time_machine.Traveller,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker, messages = _fanned_out(aws)
    for partition in ("0", "1", "2"):
        _run(aws, worker, messages[partition])
    monkeypatch.setenv("REAPED_JOBS", f"{TOY_JOB}=10")
    monkeypatch.setenv("REAPER_LOOKBACK_HOURS", "48")
    capsys.readouterr()

    def reaper_tick(scheduled_time: str) -> dict[str, Any]:
        event = {"job": JOB_NAME, "scheduled_time": scheduled_time, "attempt": "1", "trigger": "schedule"}
        return dict(lambda_handler(event, Context(function_name="tick-reaper")))

    clock.shift(timedelta(hours=1))  # delivered late: it settles only what its own tick would have
    assert reaper_tick("2026-12-01T03:05:00Z")["summary"] == {"settled": 0, "changed": 0, "ticks": []}
    assert _entry(aws, SECOND)["status"] == "started"
    assert reaper_tick("2026-12-01T03:30:00Z")["summary"] == {
        "settled": 1,
        "changed": 0,
        "ticks": [f"{TOY_JOB}@{SECOND}"],
    }
    assert _entry(aws, SECOND)["status"] == "failed"
    out = capsys.readouterr().out
    failed = [json.loads(line) for line in out.splitlines() if '"TickFailed"' in line]
    assert [(m["service"], m["job"], m["trigger"]) for m in failed] == [(TOY_JOB, TOY_JOB, "schedule")]
    assert "tick settled failed: not done by its bound" in caplog.messages
    reaper_entry = aws.dynamodb.get_item(
        TableName="LedgerTable", Key=tick_key(JOB_NAME, "2026-12-01T03:30:00Z"), ConsistentRead=True
    )["Item"]
    assert reaper_entry["status"]["S"] == "succeeded"


def test_a_complete_tick_whose_finisher_died_with_its_message_is_settled_by_the_finisher_and_counted(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    worker, messages = _fanned_out(aws)
    for partition in ("0", "1", "2"):
        _run(aws, worker, messages[partition])
    with monkeypatch.context() as dying:  # its done transaction applied, then the attempt dies
        dying.setattr("clockless.fanout.finisher.Finisher.finish", _dies)
        with pytest.raises(AttemptDied):
            worker(sqs_event([{**messages["3"], "Attributes": {"ApproximateReceiveCount": "5"}}]), Context())
    _messages(aws)  # the message in the work DLQ
    assert (_entry(aws, SECOND)["status"], _entry(aws, SECOND)["partitions_done"]) == ("started", "4")
    monkeypatch.setenv("REAPED_JOBS", f"{TOY_JOB}=10")
    monkeypatch.setenv("REAPER_LOOKBACK_HOURS", "48")
    capsys.readouterr()

    clock.shift(timedelta(hours=1))
    event = {"job": JOB_NAME, "scheduled_time": "2026-12-01T03:30:00Z", "attempt": "1", "trigger": "schedule"}
    assert lambda_handler(event, Context(function_name="tick-reaper"))["summary"]["settled"] == 1

    entry = _entry(aws, SECOND)
    assert (entry["status"], "metric_pending" in entry) == ("succeeded", False)
    _applied_once(aws)
    out = capsys.readouterr().out
    # its TickSucceeded once, under its own job (the other is the reaper's own tick's)
    assert [json.loads(line)["job"] for line in out.splitlines() if '"TickSucceeded"' in line] == [TOY_JOB, JOB_NAME]
