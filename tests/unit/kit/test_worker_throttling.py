"""The worker when DynamoDB throttles it for longer than its budget, on a fake clock: the run
hands on (the cursor stored, the lease released, why noted) and sends a continuation after a
delay, and the message counts as processed; anything else that fails is noted on the partition
record and fails the message. In-process moto behind a client that throttles chosen operations."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.exceptions import ClientError

from clockless.fanout.keys import partition_key, tick_key
from tests.unit.kit.conftest import Aws
from tests.unit.kit.fake_clock import FakeClock
from tests.unit.kit.toy import BUSINESS_DATE, TOY_JOB, Context, receive, seed, sqs_event, toy_job

SCHEDULED = f"{BUSINESS_DATE}T02:00:00Z"
# A partition's first lease is one TransactWriteItems (with the ledger's check on the tick entry).
LEASE = 1
TICK = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}


class Throttling:
    """The real client, except that `throttled` operations are refused for capacity (as DynamoDB
    refuses them: a transaction cancelled with ThrottlingError, anything else ThrottlingException),
    after `after` calls of them went through; `failing` ones are refused for another reason."""

    def __init__(
        self, client: Any, throttled: dict[str, int] | None = None, failing: str | None = None, after: int = 0
    ) -> None:
        self.client = client
        self.exceptions = client.exceptions
        self.throttled = dict(throttled or {})
        self.failing = failing
        self.after = after  # calls of `failing` that go through first
        self.refused: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**request: Any) -> Any:
            if name == self.failing and self.after > 0:
                self.after -= 1
            elif name == self.failing:
                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no\nway"}}, name)
            if name in self.throttled:
                if self.throttled[name] > 0:
                    self.throttled[name] -= 1
                else:
                    self.refused.append(name)
                    raise _throttle(name, request)
            return method(**request)

        return call


def _throttle(operation: str, request: dict[str, Any]) -> ClientError:
    if operation == "transact_write_items":
        reasons = [{"Code": "ThrottlingError"}] + [{"Code": "None"}] * (len(request["TransactItems"]) - 1)
        response: Any = {
            "Error": {"Code": "TransactionCanceledException", "Message": "x"},
            "CancellationReasons": reasons,
        }
        return ClientError(response, "TransactWriteItems")
    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, operation)


class RecordingQueue:
    def __init__(self, sqs: Any) -> None:
        self.sqs = sqs
        self.sent: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sqs, name)

    def send_message(self, **request: Any) -> Any:
        self.sent.append(request)
        return self.sqs.send_message(**request)


def _runner(aws: Aws, worker: Any, dynamodb: Throttling) -> tuple[FakeClock, RecordingQueue]:
    runner = worker.clockless_runner
    runner.clock = FakeClock()
    queue = RecordingQueue(aws.sqs)
    runner.clients = lambda: (dynamodb, queue)
    return runner.clock, queue


def _one_partition_message(aws: Aws) -> dict[str, Any]:
    seed(aws.dynamodb, 6, partitions=1)
    _, _, coordinator, worker = toy_job(partitions=1)
    coordinator(dict(TICK), Context())
    (message,) = receive(aws.sqs, aws.work_queue)
    aws.sqs.delete_message(QueueUrl=aws.work_queue, ReceiptHandle=message["ReceiptHandle"])
    message["worker"] = worker
    return message


def _deliver(message: dict[str, Any], remaining_ms: int, receives: int = 1) -> dict[str, Any]:
    event = sqs_event([{**message, "Attributes": {"ApproximateReceiveCount": str(receives)}}])
    return dict(message["worker"](event, Context(remaining_ms=remaining_ms)))


def _record(aws: Aws) -> dict[str, Any]:
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=partition_key(TOY_JOB, SCHEDULED, "0")).get("Item")
    return {k: v.get("S", v.get("N")) for k, v in (item or {}).items()}


def _status(aws: Aws) -> str | None:
    entry = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"]
    status = entry.get("status", {}).get("S")
    return None if status is None else str(status)


def test_item_transactions_throttled_past_the_budget_hand_on_with_a_delay(aws: Aws) -> None:
    message = _one_partition_message(aws)
    dynamodb = Throttling(aws.dynamodb, throttled={"transact_write_items": LEASE})
    clock, queue = _runner(aws, message["worker"], dynamodb)

    response = _deliver(message, remaining_ms=60_000, receives=2)

    # processed, not failed: no visibility timeout, no receive used up
    assert response == {"batchItemFailures": []}
    assert 0 < clock.waited <= 30  # waited until the 30 s margin
    (continuation,) = queue.sent
    assert 3 <= continuation["DelaySeconds"] <= 5
    assert json.loads(continuation["MessageBody"])["hop"] == 1
    record = _record(aws)
    assert (record["lease_until"], record["throttle_continuations"], record["receives"]) == ("0", "1", "2")
    delay = continuation["DelaySeconds"]
    assert record["last_error"] == (
        f"throttled: TransactionCanceledException (ThrottlingError) on ToyItems, continued after {delay} s"
    )


def test_the_next_throttled_hand_on_waits_longer(aws: Aws) -> None:
    message = _one_partition_message(aws)
    dynamodb = Throttling(aws.dynamodb, throttled={"transact_write_items": LEASE})
    _, queue = _runner(aws, message["worker"], dynamodb)
    for hop in range(3):
        _deliver({**message, "Body": json.dumps({**json.loads(message["Body"]), "hop": hop})}, remaining_ms=60_000)
    assert [json.loads(m["MessageBody"])["hop"] for m in queue.sent] == [1, 2, 3]
    assert 10 <= queue.sent[2]["DelaySeconds"] <= 20
    assert _record(aws)["throttle_continuations"] == "3"


def test_a_hand_on_that_stays_throttled_waits_for_the_lease_to_run_out(aws: Aws) -> None:
    message = _one_partition_message(aws)
    # the lease goes through, then every write is throttled
    dynamodb = Throttling(aws.dynamodb, throttled={"transact_write_items": LEASE, "update_item": 0})
    _, queue = _runner(aws, message["worker"], dynamodb)

    response = _deliver(message, remaining_ms=60_000)

    assert response == {"batchItemFailures": []}
    (continuation,) = queue.sent
    # the lease lasts the attempt (60 s): the continuation is not seen before it has run out
    assert continuation["DelaySeconds"] >= 61
    assert int(_record(aws)["lease_until"]) > 0


def test_a_lease_that_stays_throttled_sends_a_continuation_and_takes_nothing(aws: Aws) -> None:
    message = _one_partition_message(aws)
    dynamodb = Throttling(aws.dynamodb, throttled={"transact_write_items": 0})
    _, queue = _runner(aws, message["worker"], dynamodb)

    assert _deliver(message, remaining_ms=60_000) == {"batchItemFailures": []}

    (continuation,) = queue.sent
    assert continuation["DelaySeconds"] >= 1
    assert _record(aws) == {}


def test_a_finisher_that_stays_throttled_leaves_the_tick_to_the_continuation(aws: Aws) -> None:
    message = _one_partition_message(aws)
    dynamodb = Throttling(aws.dynamodb, throttled={"get_item": 0})
    _, queue = _runner(aws, message["worker"], dynamodb)

    assert _deliver(message, remaining_ms=60_000) == {"batchItemFailures": []}
    assert _record(aws)["status"] == "done"
    assert _status(aws) != "succeeded"

    # the throttle is over when the continuation comes: it finds the partition done and settles the tick
    dynamodb.throttled.clear()
    (continuation,) = queue.sent
    assert _deliver({**message, "Body": continuation["MessageBody"]}, remaining_ms=60_000) == {"batchItemFailures": []}
    assert _status(aws) == "succeeded"


def test_a_run_that_fails_notes_why_on_one_line_and_fails_the_message(aws: Aws) -> None:
    message = _one_partition_message(aws)
    _, queue = _runner(aws, message["worker"], Throttling(aws.dynamodb, failing="transact_write_items", after=LEASE))

    # (every message of the batch failed: Powertools raises, and the poller leaves the message to SQS)
    with pytest.raises(BatchProcessingError):
        _deliver(message, remaining_ms=300_000, receives=4)

    # Nothing handed on: no message sent (its own comes back after the backoff).
    assert queue.sent == []
    record = _record(aws)
    assert record["receives"] == "4"
    assert record["last_error"].startswith("ClientError: An error occurred (AccessDeniedException)")
    assert "\n" not in record["last_error"]
