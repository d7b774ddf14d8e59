"""What a fanned-out tick costs, counted exactly on the embedded server: the coordinator's
requests stay flat in the number of items, and a worker's grow by one transaction per 49 items
(two actions each) plus a Query and a cursor per page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout.keys import tick_key
from clockless_tools.bench import requests as expected
from clockless_tools.local.botocore_hooks import count_requests
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    OUTPUTS_TABLE,
    TOY_JOB,
    Context,
    ServedToy,
    drain,
    seed,
    served_toy,
    sqs_event,
    toy_job,
)

TICK = {"job": TOY_JOB, "scheduled_time": f"{BUSINESS_DATE}T02:00:00Z", "attempt": "1", "trigger": "schedule"}


@pytest.fixture
def toy(dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedToy]:
    with served_toy(dynamodb_endpoint, monkeypatch, WORK_CONCURRENCY="1") as served:
        yield served


def _summary(toy: ServedToy) -> dict[str, Any]:
    entry = toy.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, TICK["scheduled_time"]))["Item"]
    return dict(json.loads(entry["summary"]["S"]))


@pytest.mark.parametrize("items", [0, 300])
def test_the_coordinator_costs_the_same_whatever_the_number_of_items(toy: ServedToy, items: int) -> None:
    seed(toy.dynamodb, items)
    _, _, coordinator, _ = toy_job()

    with count_requests() as requests:
        coordinator(dict(TICK), Context())

    # the toy job fans out over 4 partitions
    assert dict(requests.operations) == expected.coordinator(4)


def test_a_partition_costs_a_transaction_per_49_items_and_a_query_and_cursor_per_page(
    toy: ServedToy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORK_PAGE_SIZE", "60")
    seed(toy.dynamodb, 130, partitions=1)
    _, _, coordinator, worker = toy_job(lambda: toy.dynamodb, partitions=1)
    coordinator(dict(TICK), Context())
    (message,) = toy.sqs.receive_message(QueueUrl=toy.work_queue, MaxNumberOfMessages=10)["Messages"]
    found = int(
        toy.dynamodb.query(
            TableName="ToyItems",
            IndexName="due-by-shard",
            KeyConditionExpression="#s = :s",
            ExpressionAttributeNames={"#s": "shard"},
            ExpressionAttributeValues={":s": {"S": "0"}},
            Select="COUNT",
        )["Count"]
    )

    with count_requests() as requests:
        worker(sqs_event([message]), Context())

    pages = [60] * (found // 60) + [found % 60]  # the last page is short (or empty, when the count divides)
    assert len(pages) >= 2
    # One partition, so this run also finishes the tick; the toy's item is 2 actions (marked done, its output).
    assert dict(requests.operations) == expected.partition_run(pages, actions_per_item=2, finishes_tick=True)


def test_a_duplicate_message_costs_its_refused_lease_and_a_look_at_the_tick(toy: ServedToy) -> None:
    seed(toy.dynamodb, 20, partitions=1)
    _, _, coordinator, worker = toy_job(lambda: toy.dynamodb, partitions=1)
    coordinator(dict(TICK), Context())
    (message,) = toy.sqs.receive_message(QueueUrl=toy.work_queue, MaxNumberOfMessages=10)["Messages"]
    worker(sqs_event([message]), Context())

    with count_requests() as requests:
        worker(sqs_event([message]), Context())

    # the message's visibility bound, the lease's transaction refused (its record says done), the finisher's GetItem
    assert dict(requests.operations) == expected.duplicate_partition_message()


def test_a_message_for_a_tick_nobody_claimed_costs_one_ledger_request_and_writes_nothing(toy: ServedToy) -> None:
    seed(toy.dynamodb, 20, partitions=1)
    _, _, _, worker = toy_job(lambda: toy.dynamodb, partitions=1)
    body = {"kind": "partition", "job": TOY_JOB, "scheduled_time": TICK["scheduled_time"], "partition": "0"}
    forged = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": json.dumps(body | {"params": {"until": "9999"}})}

    # BatchSize 1: the message failing fails the invocation, and SQS shows it again (after the
    # kit's first backoff) until maxReceiveCount moves it to the work DLQ. Two ChangeMessageVisibility:
    # the message hidden until the attempt is over, then shown again after the backoff.
    with count_requests() as requests, pytest.raises(BatchProcessingError, match="no coordinator claimed it"):
        worker(sqs_event([forged]), Context())

    assert dict(requests.operations) == expected.unbacked_message()
    assert toy.dynamodb.scan(TableName=OUTPUTS_TABLE, Select="COUNT")["Count"] == 0
    assert toy.dynamodb.scan(TableName="LedgerTable", Select="COUNT")["Count"] == 0


def test_lanes_count_apart_and_sum_to_the_tick(toy: ServedToy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORK_CONCURRENCY", "4")
    seed(toy.dynamodb, 110, partitions=1)
    _, _, coordinator, worker = toy_job(partitions=1)
    coordinator(dict(TICK), Context())

    drained = drain(toy.sqs, toy.work_queue, worker)

    assert drained.errors == []
    assert toy.dynamodb.scan(TableName=OUTPUTS_TABLE, Select="COUNT")["Count"] == 110
    assert _summary(toy) == {"found": 110, "applied": 110, "already_done": 0, "failed": 0, "partitions": 1}
    lanes = toy.dynamodb.query(
        TableName="LedgerTable",
        KeyConditionExpression="job = :job",
        ExpressionAttributeValues={":job": {"S": f"{TOY_JOB}#work"}},
    )["Items"]
    lane_ids = {r["scheduled_time"]["S"].rsplit("#l", 1)[1] for r in lanes if "#l" in r["scheduled_time"]["S"]}
    # 110 items, 49 a transaction: three transactions, each in its own lane, at once
    assert lane_ids == {"0", "1", "2"}
