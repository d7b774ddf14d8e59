"""A partition message that fails comes back in seconds (one whose worker dies, seconds after its
attempt could end), and one that fails its last receive is named on its tick, which settles
`failed` instead of staying `started`; redriven, it succeeds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
import time_machine
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout.keys import partition_key, tick_key
from clockless.fanout.redelivery import come_back_soon
from clockless.fanout.retry import redelivery_backoff_seconds
from clockless.ledger import LedgerEntry
from clockless_tools.simulate.faults import AttemptDied
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import BUSINESS_DATE, TOY_JOB, Context, ToyWork, drain, receive, seed, sqs_event, toy_job

SCHEDULED: Final = f"{BUSINESS_DATE}T02:00:00Z"
TICK: Final = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}


class UnreadableShard(ToyWork):
    """Partition 0's index cannot be read (the whole message fails, not an item)."""

    def read(self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int) -> Any:
        if partition == "0":
            raise ConnectionError("shard 0 unreachable")
        return super().read(partition, params, cursor, limit)


def _entry(aws: Aws) -> LedgerEntry:
    return LedgerEntry.from_item(
        aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"]
    )


def test_the_backoff_is_ten_seconds_doubling_and_capped() -> None:
    assert [redelivery_backoff_seconds(receives) for receives in range(1, 8)] == [10, 20, 40, 80, 160, 300, 300]


def test_a_failed_partition_message_is_shown_again_after_the_backoff(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(aws.dynamodb, 8)
    _, work, coordinator, _ = toy_job()
    failing = work.worker(lambda: UnreadableShard(aws.dynamodb))
    hidden: list[tuple[int, int | None]] = []
    real = come_back_soon

    def spy(worker: Any, record: Any, receives: int) -> int | None:
        hidden.append((receives, real(worker, record, receives)))
        return hidden[-1][1]

    monkeypatch.setattr("clockless.fanout.dispatcher.come_back_soon", spy)
    coordinator(dict(TICK), Context())
    messages = [m for m in receive(aws.sqs, aws.work_queue) if json.loads(m["Body"])["partition"] == "0"]

    with pytest.raises(BatchProcessingError, match="shard 0 unreachable"):
        failing(sqs_event(messages[:1]), Context())

    assert hidden == [(1, 10)]


def test_a_partition_failing_its_last_receive_fails_its_tick_by_name_and_a_redrive_settles_it(aws: Aws) -> None:
    seed(aws.dynamodb, 12)
    _, work, coordinator, healthy = toy_job()
    failing = work.worker(lambda: UnreadableShard(aws.dynamodb))
    coordinator(dict(TICK), Context())
    (stuck,) = [m for m in receive(aws.sqs, aws.work_queue) if json.loads(m["Body"])["partition"] == "0"]
    # Partition 0's message is held by the failing worker's receives; the others run.
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=stuck["ReceiptHandle"])
    drain(aws.sqs, aws.work_queue, healthy)
    assert _entry(aws).status == "started"

    # Its fifth receive (the queue's maxReceiveCount) fails as the four before did.
    stuck["Attributes"] = {"ApproximateReceiveCount": "5"}
    with pytest.raises(BatchProcessingError):
        failing(sqs_event([stuck]), Context())

    entry = _entry(aws)
    assert entry.status == "failed"
    assert str(entry.error).startswith("partition 0 failed every receive")
    assert [(f.key, f.reason) for f in entry.failures] == [("partition 0", "partition")]

    # `clockless work redrive` sends it back once the shard is readable again.
    aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody=stuck["Body"])
    drain(aws.sqs, aws.work_queue, healthy)

    entry = _entry(aws)
    assert (entry.status, entry.error, entry.failures) == ("succeeded", None, ())
    assert entry.summary is not None
    assert entry.summary["applied"] == 12


class DyingShard(ToyWork):
    """Partition 0's run is killed while it reads (its Lambda timeout, a crash): nothing runs after."""

    def read(self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int) -> Any:
        if partition == "0":
            raise AttemptDied("killed")
        return super().read(partition, params, cursor, limit)


def _visible(aws: Aws) -> int:
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.work_queue, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_a_partition_whose_worker_dies_is_tried_again_after_its_attempt_not_the_visibility_timeout(aws: Aws) -> None:
    # Given a partition message received by the poller (hidden for the queue's 1,800 s), whose
    # worker, with 300 s left, dies on its first receive
    seed(aws.dynamodb, 8)
    _, work, coordinator, healthy = toy_job()
    coordinator(dict(TICK), Context())
    with time_machine.travel(datetime(2026, 12, 1, 2, 0, 20, tzinfo=UTC), tick=False) as clock:
        polled = aws.sqs.receive_message(QueueUrl=aws.work_queue, MaxNumberOfMessages=10, VisibilityTimeout=1800)
        (first,) = [m for m in polled["Messages"] if json.loads(m["Body"])["partition"] == "0"]
        with pytest.raises(AttemptDied):
            work.worker(lambda: DyingShard(aws.dynamodb))(sqs_event([first]), Context(remaining_ms=300_000))

        # Then it shows again 10 s after the attempt could last, not after 1,800 s, alone
        clock.shift(timedelta(seconds=309))
        assert _visible(aws) == 0
        clock.shift(timedelta(seconds=2))
        (again,) = receive(aws.sqs, aws.work_queue)
        assert json.loads(again["Body"]) == json.loads(first["Body"])
        # And its retry finds the dead run's lease expired and runs the partition
        assert not healthy(sqs_event([again]), Context())["batchItemFailures"]
    record = aws.dynamodb.get_item(
        TableName="LedgerTable", Key=partition_key(TOY_JOB, SCHEDULED, "0"), ConsistentRead=True
    )["Item"]
    assert record["status"]["S"] == "done"
