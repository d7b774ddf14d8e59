"""A fanned-out tick from start to finish: the coordinator hands out partitions, workers apply
every due item once, the finisher settles the ledger."""

from __future__ import annotations

import json
from typing import Any

from clockless.fanout.keys import partition_key, tick_key
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    ITEMS_TABLE,
    OUTPUTS_TABLE,
    PARTITIONS,
    TOY_JOB,
    Context,
    bodies,
    drain,
    seed,
    toy_job,
)

TICK = {"job": TOY_JOB, "scheduled_time": f"{BUSINESS_DATE}T02:00:00Z", "attempt": "1", "trigger": "schedule"}
SCHEDULED = TICK["scheduled_time"]


def _entry(aws: Aws) -> dict[str, Any]:
    return dict(aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"])


def _outputs(aws: Aws) -> dict[str, str]:
    items = aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"]
    return {item["item_id"]["S"]: item["tick"]["S"] for item in items}


def test_the_coordinator_sends_one_message_per_partition_and_records_partitions_total(aws: Aws) -> None:
    seed(aws.dynamodb, 20)
    _, _, coordinator, _ = toy_job()

    result = coordinator(dict(TICK), Context())

    assert result["outcome"] == "executed"
    assert result["summary"] == {"fan_out": {"partitions": 4}, "until": BUSINESS_DATE}
    messages = bodies(aws.sqs, aws.work_queue)
    assert sorted(m["partition"] for m in messages) == PARTITIONS
    assert {m["kind"] for m in messages} == {"partition"}
    assert {m["hop"] for m in messages} == {0}
    entry = _entry(aws)
    assert entry["partitions_total"] == {"N": "4"}
    assert entry["status"] == {"S": "started"}  # not succeeded: the items are not done yet
    assert "fanned_out_at" in entry
    assert json.loads(entry["coordinator_summary"]["S"])["fan_out"] == {"partitions": 4}


def test_workers_apply_every_due_item_once_and_the_finisher_settles_the_tick(aws: Aws) -> None:
    due = seed(aws.dynamodb, 40, not_due=7)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())

    drained = drain(aws.sqs, aws.work_queue, worker)

    assert drained.errors == []
    assert _outputs(aws) == dict.fromkeys(due, f"{TOY_JOB}@{SCHEDULED}")
    entry = _entry(aws)
    assert entry["status"] == {"S": "succeeded"}
    assert entry["partitions_done"] == {"N": "4"}
    assert entry["succeeded_job"] == {"S": TOY_JOB}
    assert json.loads(entry["summary"]["S"]) == {
        "found": 40,
        "applied": 40,
        "already_done": 0,
        "failed": 0,
        "partitions": 4,
    }
    assert entry["summary_scope"] == {"S": "tick"}
    for partition in PARTITIONS:
        record = aws.dynamodb.get_item(TableName="LedgerTable", Key=partition_key(TOY_JOB, SCHEDULED, partition))
        assert record["Item"]["status"] == {"S": "done"}
    not_due = aws.dynamodb.scan(
        TableName=ITEMS_TABLE, FilterExpression="attribute_exists(#s)", ExpressionAttributeNames={"#s": "shard"}
    )["Items"]
    assert len(not_due) == 7
