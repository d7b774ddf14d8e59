"""A partition message that fails comes back in seconds, and one that fails its last receive is
named on its tick, which settles `failed` instead of staying `started`; redriven, it succeeds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout.keys import tick_key
from clockless.fanout.redelivery import come_back_soon
from clockless.fanout.retry import redelivery_backoff_seconds
from clockless.ledger import LedgerEntry
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
