"""A toy PartitionWork over two DynamoDB tables, shaped like window generation: each due item is
two conditional actions (mark the item done, which takes it out of the sparse index, and put
its output), so 49 items fill a transaction. Used by the kit's unit tests (in-process moto) and
the fan-out fault-model tests (moto's server)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from clockless.dynamo import shard_for
from clockless.fanout import FanOut, Page
from clockless.items import RowError
from clockless.job import ScheduledJob
from clockless.run import JobRun
from clockless_tools.local.dynamodb import table_definition
from clockless_tools.template.intrinsics import LocalNames
from tests.jobs import project_template

ITEMS_TABLE: Final = "ToyItems"
OUTPUTS_TABLE: Final = "ToyOutputs"
DUE_INDEX: Final = "due-by-shard"
PARTITIONS: Final = [str(shard) for shard in range(4)]
BUSINESS_DATE: Final = "2026-12-01"
# An item whose output cannot be written (its key is empty): DynamoDB refuses the whole request.
POISON: Final = "poison"
# An item its domain logic refuses (`writes` raises): it fails alone.
UNUSABLE: Final = "unusable"
TOY_JOB: Final = "toy-job"


@dataclass(frozen=True)
class ToyItem:
    item_id: str
    due: str
    value: str


class ToyWork:
    def __init__(self, client: Any) -> None:
        self.client = client

    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> Page[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": ITEMS_TABLE,
            "IndexName": DUE_INDEX,
            "KeyConditionExpression": "#shard = :shard AND due <= :until",
            "ExpressionAttributeNames": {"#shard": "shard"},
            "ExpressionAttributeValues": {":shard": {"S": partition}, ":until": {"S": str(params["until"])}},
            "Limit": limit,
        }
        if cursor is not None:
            request["ExclusiveStartKey"] = dict(cursor)
        response = self.client.query(**request)
        return Page(list(response.get("Items") or []), response.get("LastEvaluatedKey"))

    @property
    def table(self) -> str:
        return ITEMS_TABLE

    def row_key(self, row: Mapping[str, Any]) -> str:
        return str(row["item_id"]["S"])

    def item_of(self, row: Mapping[str, Any]) -> ToyItem:
        key = self.row_key(row)
        fields = {}
        for name in ("due", "value"):
            value = (row.get(name) or {}).get("S")
            if not isinstance(value, str):
                raise RowError(f"{ITEMS_TABLE} {key}", name, f"must be a string, got {row.get(name)!r}")
            fields[name] = value
        return ToyItem(key, fields["due"], fields["value"])

    def writes(self, item: ToyItem, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]:
        if item.value == UNUSABLE:
            raise ValueError(f"toy item {item.item_id}: value {UNUSABLE!r} cannot be applied")
        output_id = "" if item.value == POISON else item.item_id
        return [
            {
                "Update": {
                    "TableName": ITEMS_TABLE,
                    "Key": {"item_id": {"S": item.item_id}},
                    "UpdateExpression": "SET done_for = :tick REMOVE #shard",
                    "ConditionExpression": "attribute_exists(#shard) AND due = :due",
                    "ExpressionAttributeNames": {"#shard": "shard"},
                    "ExpressionAttributeValues": {":tick": {"S": tick_key}, ":due": {"S": item.due}},
                }
            },
            {
                "Put": {
                    "TableName": OUTPUTS_TABLE,
                    "Item": {"item_id": {"S": output_id}, "tick": {"S": tick_key}, "value": {"S": item.value}},
                    "ConditionExpression": "attribute_not_exists(item_id)",
                }
            },
        ]

    def item_key(self, item: ToyItem) -> str:
        return item.item_id

    def encode(self, item: ToyItem) -> dict[str, Any]:
        return {"item_id": item.item_id, "due": item.due, "value": item.value}

    def decode(self, data: Mapping[str, Any]) -> ToyItem:
        return ToyItem(str(data["item_id"]), str(data["due"]), str(data["value"]))


class FixedWork(ToyWork):
    """The toy after its bug is fixed: a poisoned or unusable item's output gets its key."""

    def writes(self, item: ToyItem, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]:
        fixed = ToyItem(item.item_id, item.due, "fixed") if item.value in (POISON, UNUSABLE) else item
        return super().writes(fixed, params, tick_key)


def toy_tables() -> list[dict[str, Any]]:
    return [
        {
            "TableName": ITEMS_TABLE,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                {"AttributeName": "item_id", "AttributeType": "S"},
                {"AttributeName": "shard", "AttributeType": "S"},
                {"AttributeName": "due", "AttributeType": "S"},
            ],
            "KeySchema": [{"AttributeName": "item_id", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": DUE_INDEX,
                    "KeySchema": [
                        {"AttributeName": "shard", "KeyType": "HASH"},
                        {"AttributeName": "due", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        },
        {
            "TableName": OUTPUTS_TABLE,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "item_id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "item_id", "KeyType": "HASH"}],
        },
    ]


def create_tables(client: Any) -> None:
    template = project_template()  # read once per process: the toy's tables are made per test
    for logical_id in template.tables_of_kind("idempotency", "ledger"):
        client.create_table(**table_definition(logical_id, template.tables[logical_id], LocalNames()))
    for definition in toy_tables():
        client.create_table(**definition)


def seed(
    client: Any,
    count: int,
    *,
    poison: int = 0,
    not_due: int = 0,
    partitions: int = len(PARTITIONS),
    already_done: int = 0,
) -> list[str]:
    """`count` due items (the first `poison` of them poisoned) and `not_due` items due later, then
    `already_done` due items whose output exists: their writes fail a condition and they stay in
    the index (found `already_done` by every run that reads them)."""
    ids = []
    requests = []
    for index in range(count + not_due):
        item_id = f"item-{index:05d}"
        due = BUSINESS_DATE if index < count else "2026-12-31"
        value = POISON if index < poison else str(index)
        item = {
            "item_id": {"S": item_id},
            "shard": {"S": shard_for(item_id, partitions)},
            "due": {"S": due},
            "value": {"S": value},
        }
        requests.append({"PutRequest": {"Item": item}})
        if index < count:
            ids.append(item_id)
    outputs = []
    for index in range(already_done):
        item_id = f"done-{index:05d}"
        shard = {"S": shard_for(item_id, partitions)}
        item = {"item_id": {"S": item_id}, "shard": shard, "due": {"S": BUSINESS_DATE}, "value": {"S": "done"}}
        requests.append({"PutRequest": {"Item": item}})
        outputs.append({"PutRequest": {"Item": {"item_id": {"S": item_id}, "tick": {"S": "earlier"}}}})
    for start in range(0, len(requests), 25):
        client.batch_write_item(RequestItems={ITEMS_TABLE: requests[start : start + 25]})
    for start in range(0, len(outputs), 25):
        client.batch_write_item(RequestItems={OUTPUTS_TABLE: outputs[start : start + 25]})
    return ids


def toy_job(
    client_factory: Any = None,
    *,
    partitions: int = len(PARTITIONS),
    overlap: str = "run-both",
    tolerated_failures: int | str | None = None,
) -> tuple[ScheduledJob, FanOut, Any, Any]:
    """A fresh job (its own Powertools store) with its coordinator and worker handlers."""
    import boto3

    job = ScheduledJob(TOY_JOB, overlap=overlap)
    work = FanOut(job, partitions=[str(shard) for shard in range(partitions)], tolerated_failures=tolerated_failures)

    @job.handler
    def coordinator(run: JobRun) -> Mapping[str, Any]:
        return work.start(run, params={"until": BUSINESS_DATE})

    worker = work.worker(lambda: ToyWork(client_factory() if client_factory else boto3.client("dynamodb")))
    return job, work, coordinator, worker


@dataclass
class Context:
    """A Lambda context whose remaining time is set by the test."""

    remaining_ms: int = 300_000
    function_name: str = "toy-worker"
    aws_request_id: str = ""

    def __post_init__(self) -> None:
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def sqs_event(
    messages: list[dict[str, Any]], queue_arn: str = "arn:aws:sqs:us-east-1:123456789012:toy-work"
) -> dict[str, Any]:
    """An ESM event as Lambda's poller builds it from received messages."""
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": {
                    "ApproximateReceiveCount": message.get("Attributes", {}).get("ApproximateReceiveCount", "1"),
                    "SentTimestamp": "0",
                },
                "messageAttributes": {},
                "md5OfBody": message.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for message in messages
        ]
    }


def receive(sqs: Any, url: str, limit: int = 10) -> list[dict[str, Any]]:
    return list(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=limit, VisibilityTimeout=0).get("Messages") or [])


def bodies(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message now in the queue (received and left there), as JSON."""
    found: dict[str, dict[str, Any]] = {}
    for _ in range(20):
        for message in receive(sqs, url):
            found[message["MessageId"]] = json.loads(message["Body"])
    return list(found.values())


@contextmanager
def kit_environment(monkeypatch: Any, work_queue: str, dlq: str, **extra: str) -> Iterator[None]:
    values = {
        "IDEMPOTENCY_TABLE_NAME": "IdempotencyTable",
        "IDEMPOTENCY_EXPIRY_SECONDS": "3600",
        "LEDGER_TABLE_NAME": "LedgerTable",
        "LEDGER_RETENTION_DAYS": "30",
        "WORK_QUEUE_URL": work_queue,
        "WORK_DEAD_LETTER_QUEUE_URL": dlq,
        **extra,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    yield


@dataclass
class Drained:
    """What draining a work queue did: each message's outcome, and the deliveries that raised."""

    outcomes: list[str]
    errors: list[BaseException]


def drain(sqs: Any, url: str, worker: Any, *, context: Any = None, limit: int = 500) -> Drained:
    """Lambda's SQS poller with BatchSize 1, in the test's thread: receive, invoke, delete the
    message unless it was reported failed (then it shows again at once)."""
    drained = Drained([], [])
    for _ in range(limit):
        messages = list(
            sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=60).get("Messages") or []
        )
        if not messages:
            return drained
        message = messages[0]
        try:
            response = worker(sqs_event(messages), context or Context())
        except Exception as error:
            drained.errors.append(error)
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
            continue
        if response.get("batchItemFailures"):
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
            drained.outcomes.append("reported failed")
            continue
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        drained.outcomes.append("ok")
    raise AssertionError(f"the queue did not drain in {limit} deliveries: {drained}")


@dataclass
class ServedToy:
    """The toy's tables and queues on the embedded server (moto's, over HTTP)."""

    dynamodb: Any
    sqs: Any
    work_queue: str
    dead_letter_queue: str


@contextmanager
def served_toy(endpoint: str, monkeypatch: Any, **environment: str) -> Iterator[ServedToy]:
    from clockless_tools.local.dynamodb import local_client

    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", endpoint)
    dynamodb = local_client("dynamodb", endpoint)
    sqs = local_client("sqs", endpoint)
    create_tables(dynamodb)
    suffix = uuid.uuid4().hex[:8]
    dlq = sqs.create_queue(QueueName=f"toy-work-dlq-{suffix}")["QueueUrl"]
    work = sqs.create_queue(QueueName=f"toy-work-{suffix}", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    try:
        with kit_environment(monkeypatch, work, dlq, **environment):
            yield ServedToy(dynamodb, sqs, work, dlq)
    finally:
        for table in dynamodb.list_tables()["TableNames"]:
            if table in {ITEMS_TABLE, OUTPUTS_TABLE, "LedgerTable", "IdempotencyTable"}:
                dynamodb.delete_table(TableName=table)
        sqs.delete_queue(QueueUrl=work)
        sqs.delete_queue(QueueUrl=dlq)
