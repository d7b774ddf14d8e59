"""A bad row fails alone in a fanned-out tick: a row that does not decode, or whose item the domain
logic or DynamoDB refuses, at every position of its partition (first, middle, last of a page, on a
page boundary, alone), costs no good item; the tick settles `failed` naming it (or `succeeded`
within the job's tolerance), and a replay after the fix applies it once.

A cheap representative case of each kind runs in `make test`; the rest of the sweep is marked slow."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from clockless.fanout.keys import tick_key
from clockless.ledger import LedgerEntry
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    DUE_INDEX,
    ITEMS_TABLE,
    OUTPUTS_TABLE,
    POISON,
    TOY_JOB,
    UNUSABLE,
    Context,
    FixedWork,
    bodies,
    drain,
    seed,
    toy_job,
)

SCHEDULED: Final = f"{BUSINESS_DATE}T02:00:00Z"
TICK: Final = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}
PAGE: Final = 3
ITEMS: Final = 7  # pages of 3, 3, 1 in one partition
# Position in the partition's read order -> what it is.
POSITIONS: Final = {
    "first of a page": 0,
    "middle of a page": 1,
    "last of a page, on the boundary": 2,
    "first after a boundary": 3,
    "last of the partition": 6,
}
# How a row goes bad, and the reason class it is listed under.
KINDS: Final = {
    "a field missing": "decode",
    "a field of the wrong type": "decode",
    "a value the domain refuses": "domain",
    "a write DynamoDB refuses": "write",
}
CHEAP: Final = {
    ("a field missing", "first of a page"),
    ("a value the domain refuses", "last of a page, on the boundary"),
}


def _spoil(aws: Aws, item_id: str, kind: str) -> None:
    key = {"item_id": {"S": item_id}}
    if kind == "a field missing":
        aws.dynamodb.update_item(TableName=ITEMS_TABLE, Key=key, UpdateExpression="REMOVE #v", **_value_name())
    elif kind == "a field of the wrong type":
        aws.dynamodb.update_item(
            TableName=ITEMS_TABLE,
            Key=key,
            UpdateExpression="SET #v = :n",
            ExpressionAttributeValues={":n": {"N": "7"}},
            **_value_name(),
        )
    else:
        value = UNUSABLE if kind == "a value the domain refuses" else POISON
        aws.dynamodb.update_item(
            TableName=ITEMS_TABLE,
            Key=key,
            UpdateExpression="SET #v = :bad",
            ExpressionAttributeValues={":bad": {"S": value}},
            **_value_name(),
        )


def _mend(aws: Aws, item_id: str) -> None:
    """The row corrected by hand (the fix for a decode failure; the fixed code handles the rest)."""
    aws.dynamodb.update_item(
        TableName=ITEMS_TABLE,
        Key={"item_id": {"S": item_id}},
        UpdateExpression="SET #v = if_not_exists(#v, :good)",
        ExpressionAttributeValues={":good": {"S": "mended"}},
        **_value_name(),
    )
    item = aws.dynamodb.get_item(TableName=ITEMS_TABLE, Key={"item_id": {"S": item_id}})["Item"]
    if "N" in item["value"]:
        aws.dynamodb.update_item(
            TableName=ITEMS_TABLE,
            Key={"item_id": {"S": item_id}},
            UpdateExpression="SET #v = :good",
            ExpressionAttributeValues={":good": {"S": "mended"}},
            **_value_name(),
        )


def _value_name() -> dict[str, Any]:
    return {"ExpressionAttributeNames": {"#v": "value"}}


def _read_order(aws: Aws) -> list[str]:
    rows = aws.dynamodb.query(
        TableName=ITEMS_TABLE,
        IndexName=DUE_INDEX,
        KeyConditionExpression="#shard = :shard",
        ExpressionAttributeNames={"#shard": "shard"},
        ExpressionAttributeValues={":shard": {"S": "0"}},
    )["Items"]
    return [row["item_id"]["S"] for row in rows]


def _entry(aws: Aws) -> LedgerEntry:
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"]
    return LedgerEntry.from_item(item)


def _outputs(aws: Aws) -> dict[str, int]:
    """Each item's outputs (an item applied twice would show 2: the Put is conditional, so never)."""
    found: dict[str, int] = {}
    for row in aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"]:
        found[row["item_id"]["S"]] = found.get(row["item_id"]["S"], 0) + 1
    return found


def _run_bad_row(aws: Aws, monkeypatch: pytest.MonkeyPatch, kind: str, position: int, count: int = ITEMS) -> None:
    monkeypatch.setenv("WORK_PAGE_SIZE", str(PAGE))
    ids = seed(aws.dynamodb, count, partitions=1)
    order = _read_order(aws)
    assert sorted(order) == sorted(ids)
    bad = order[position]
    _spoil(aws, bad, kind)
    _, work, coordinator, worker = toy_job(partitions=1)

    coordinator(dict(TICK), Context())
    first = drain(aws.sqs, aws.work_queue, worker)

    # Every good item applied once, in the partition's one delivery; the bad one failed alone.
    assert first.errors == []
    assert first.outcomes == ["ok"]
    assert _outputs(aws) == {item: 1 for item in ids if item != bad}
    entry = _entry(aws)
    assert entry.status == "failed"
    assert str(entry.error).startswith("1 items failed: replay them")
    assert [(f.key, f.reason) for f in entry.failures] == [(bad, KINDS[kind])]
    assert entry.failed_items == 1
    if KINDS[kind] == "decode":
        assert entry.failures[0].field == "value"
        assert "malformed tick" not in entry.failures[0].message
    dead = bodies(aws.sqs, aws.dead_letter_queue)
    assert [(d["kind"], d["keys"]) for d in dead] == [("items", [bad])]

    # The fix: the row corrected, the code fixed; the DLQ moved back twice (once by mistake).
    _mend(aws, bad)
    fixed = work.worker(lambda: FixedWork(aws.dynamodb))
    for message in dead + dead:
        aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody=json.dumps(message))
    replayed = drain(aws.sqs, aws.work_queue, fixed)

    assert replayed.errors == []
    assert _outputs(aws) == dict.fromkeys(ids, 1)
    entry = _entry(aws)
    assert (entry.status, entry.error, entry.failures) == ("succeeded", None, ())
    assert entry.summary is not None
    assert (entry.summary["applied"], entry.summary["failed"]) == (count, 0)


@pytest.mark.parametrize(("kind", "position"), sorted(CHEAP))
def test_a_bad_row_fails_alone_and_a_replay_after_the_fix_applies_it_once(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, kind: str, position: str
) -> None:
    _run_bad_row(aws, monkeypatch, kind, POSITIONS[position])


# The rest of the sweep: CI runs make test's cheap cases already.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "position"),
    [(kind, position) for kind in KINDS for position in POSITIONS if (kind, position) not in CHEAP],
)
def test_every_kind_of_bad_row_at_every_position_fails_alone(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, kind: str, position: str
) -> None:
    _run_bad_row(aws, monkeypatch, kind, POSITIONS[position])


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_bad_row_alone_in_its_partition_fails_alone(aws: Aws, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    _run_bad_row(aws, monkeypatch, kind, 0, count=1)


@pytest.mark.parametrize(("tolerated", "status"), [("10%", "succeeded"), ("5%", "failed")])
def test_a_tick_within_its_tolerance_succeeds_with_its_failures_listed(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, tolerated: int | str, status: str
) -> None:
    ids = seed(aws.dynamodb, 10, partitions=1)
    _spoil(aws, ids[4], "a field missing")
    _, _, coordinator, worker = toy_job(partitions=1, tolerated_failures=tolerated)

    coordinator(dict(TICK), Context())
    drain(aws.sqs, aws.work_queue, worker)

    entry = _entry(aws)
    assert entry.status == status
    assert [f.key for f in entry.failures] == [ids[4]]
    assert len(_outputs(aws)) == 9
