"""A buffered tick whose `start` message dies on its last receives still settles: its watch fails
the tick when the start never claimed it (a redrive of the start message starts it after all), and
sends its partitions again when the start died between its claim and its sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
import time_machine

from clockless.fanout.coordinator import FanOut
from clockless.fanout.keys import tick_key
from clockless.fanout.messages import KIND_WATCH, WorkMessage
from clockless.fanout.start_watch import fail_buffered
from clockless.fanout.store import TickStore
from clockless.state import StartVerdict, TickEntry, judge_start
from clockless.tick import Trigger
from clockless_tools.simulate.faults import AttemptDied
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import BUSINESS_DATE, OUTPUTS_TABLE, TOY_JOB, Context, drain, seed, sqs_event, toy_job

FIRST: Final = f"{BUSINESS_DATE}T02:00:00Z"
SECOND: Final = f"{BUSINESS_DATE}T03:00:00Z"
LAST_RECEIVE: Final = 5
NOW: Final = 1_000_000


def _watch(receives: int, *, until_ms: int = 0) -> WorkMessage:
    return WorkMessage(
        KIND_WATCH,
        TOY_JOB,
        datetime(2026, 12, 1, 3, tzinfo=UTC),
        Trigger.SCHEDULE,
        "",
        {"after": FIRST},
        watched="a-start-run",
        message_id="m-1",
        receives=receives,
        until_ms=until_ms,
        seen_owner="buffered" if until_ms else "",
    )


@pytest.mark.parametrize(
    ("receives", "entry", "until_ms", "verdict"),
    [
        (5, {"status": "buffered", "overlap_with": FIRST}, 0, StartVerdict.DEAD),
        (4, {"status": "buffered", "overlap_with": FIRST}, 0, StartVerdict.WAIT),
        (4, {"status": "buffered", "overlap_with": FIRST}, NOW + 1, StartVerdict.WAIT),
        (4, {"status": "buffered", "overlap_with": FIRST}, NOW - 1, StartVerdict.DEAD),
        (5, {"status": "started", "released_by": FIRST}, 0, StartVerdict.AGAIN),
        (4, {"status": "started", "released_by": FIRST}, NOW - 1, StartVerdict.ENDED),  # the last receive claimed it
        (5, {"status": "succeeded", "released_by": FIRST}, 0, StartVerdict.ENDED),
        (5, {"status": "failed", "start_failed": FIRST}, 0, StartVerdict.DEAD),  # released again by a duplicate
        (5, {"status": "buffered", "overlap_with": "another tick"}, 0, StartVerdict.ENDED),
        (5, {}, 0, StartVerdict.ENDED),
    ],
    ids=str,
)
def test_a_start_watch_judges_the_tick_entry(
    receives: int, entry: dict[str, str], until_ms: int, verdict: StartVerdict
) -> None:
    item = TickEntry.from_item({name: {"S": value} for name, value in entry.items()})
    assert judge_start(_watch(receives, until_ms=until_ms), item, now=NOW, max_receives=LAST_RECEIVE) is verdict


@pytest.fixture
def clock() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(datetime(2026, 12, 1, 5, 0, tzinfo=UTC), tick=False) as traveller:
        yield traveller


def _status(aws: Aws, scheduled_time: str) -> dict[str, Any]:
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, scheduled_time), ConsistentRead=True)
    return {name: next(iter(value.values())) for name, value in (item.get("Item") or {}).items()}


def _first_done_second_start_held(aws: Aws) -> tuple[Any, dict[str, Any]]:
    """FIRST run to its end with SECOND buffered behind it; SECOND's start message received on its
    last receive and held. (the healthy worker, that message)"""
    seed(aws.dynamodb, 8)
    _, _, coordinator, worker = toy_job(overlap="buffer")
    coordinator({"job": TOY_JOB, "scheduled_time": FIRST, "attempt": "1", "trigger": "schedule"}, Context())
    coordinator({"job": TOY_JOB, "scheduled_time": SECOND, "attempt": "1", "trigger": "schedule"}, Context())
    start = None
    while polled := aws.sqs.receive_message(QueueUrl=aws.work_queue, MaxNumberOfMessages=1, VisibilityTimeout=1800):
        if "Messages" not in polled:
            break
        (message,) = polled["Messages"]
        if json.loads(message["Body"])["kind"] == "start":
            start = message  # held by the poller, for the run under test
            continue
        assert not worker(sqs_event([message]), Context())["batchItemFailures"]
        aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=message["ReceiptHandle"])
    assert start is not None
    assert (_status(aws, FIRST)["status"], _status(aws, SECOND)["status"]) == ("succeeded", "buffered")
    start["Attributes"] = {"ApproximateReceiveCount": str(LAST_RECEIVE)}
    return worker, start


def _dies(*args: Any, **kwargs: Any) -> Any:
    raise AttemptDied("killed at its timeout")


def _deliver_the_watch(aws: Aws, worker: Any, clock: time_machine.Traveller) -> None:
    """The poller once the start's attempt is over: its watch, with no partition, runs."""
    clock.shift(timedelta(seconds=310))
    (watch,) = [
        m
        for m in aws.sqs.receive_message(QueueUrl=aws.work_queue, MaxNumberOfMessages=10, VisibilityTimeout=0)[
            "Messages"
        ]
        if json.loads(m["Body"])["kind"] == KIND_WATCH
    ]
    assert json.loads(watch["Body"])["partition"] == ""
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=watch["ReceiptHandle"])
    assert not worker(sqs_event([watch]), Context())["batchItemFailures"]


def test_a_start_dying_before_its_claim_on_its_last_receive_fails_the_tick_and_a_redrive_starts_it(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    worker, start = _first_done_second_start_held(aws)
    with monkeypatch.context() as dying:
        dying.setattr("clockless.fanout.store.TickStore.release_buffered", _dies)
        with pytest.raises(AttemptDied):
            worker(sqs_event([start]), Context())
    capsys.readouterr()

    _deliver_the_watch(aws, worker, clock)

    entry = _status(aws, SECOND)
    assert (entry["status"], entry["start_failed"]) == ("failed", FIRST)
    assert entry["error"].startswith("its start message failed every receive")
    assert capsys.readouterr().out.count('"TickFailed":[1.0]') == 1
    # `clockless work redrive` sends the start message back: it starts the tick after all.
    aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody=start["Body"])
    assert drain(aws.sqs, aws.work_queue, worker).errors == []
    entry = _status(aws, SECOND)
    assert (entry["status"], entry.get("start_failed"), entry.get("error")) == ("succeeded", None, None)


def test_a_start_dying_after_its_claim_on_its_last_receive_has_its_partitions_sent_again(
    aws: Aws, clock: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, start = _first_done_second_start_held(aws)
    with monkeypatch.context() as dying:
        dying.setattr(FanOut, "start", _dies)
        with pytest.raises(AttemptDied):
            worker(sqs_event([start]), Context())
    assert _status(aws, SECOND)["status"] == "started"  # claimed, and no partition sent

    _deliver_the_watch(aws, worker, clock)

    assert drain(aws.sqs, aws.work_queue, worker).errors == []
    entry = _status(aws, SECOND)
    assert (entry["status"], entry["partitions_done"]) == ("succeeded", "4")
    assert len(aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"]) == 8


class LostAnswer:
    """A DynamoDB client whose UpdateItem is applied, its answer lost, and sent again (botocore)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.exceptions = real.exceptions

    def update_item(self, **request: Any) -> Any:
        self.real.update_item(**request)
        return self.real.update_item(**request)


def test_a_start_watch_failing_the_tick_with_its_answer_lost_still_says_it_failed_it(aws: Aws) -> None:
    aws.dynamodb.put_item(
        TableName="LedgerTable",
        Item={**tick_key(TOY_JOB, SECOND), "status": {"S": "buffered"}, "overlap_with": {"S": FIRST}},
    )
    tick = TickStore(LostAnswer(aws.dynamodb), "LedgerTable", TOY_JOB, SECOND)

    assert fail_buffered(tick, _watch(LAST_RECEIVE)) is True  # so its TickFailed is emitted
    assert fail_buffered(tick, _watch(LAST_RECEIVE)) is False  # a duplicate watch's is not
    assert _status(aws, SECOND)["status"] == "failed"
