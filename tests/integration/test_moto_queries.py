"""The embedded server's Queries walk only the asked key's items, and answer as moto's own walk of
every item does (clockless_tools.local.moto_queries)."""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from moto.dynamodb.models.table import Table

from clockless_tools.local.dynamodb import dynamodb_client

SHARDS = 6
ROUNDS = 12


@pytest.fixture
def client(dynamodb_endpoint: str) -> Any:
    return dynamodb_client(dynamodb_endpoint)


@pytest.fixture
def table(client: Any) -> Iterator[str]:
    name = f"queries-{uuid.uuid4().hex[:12]}"
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": attribute, "AttributeType": "S"} for attribute in ("pk", "sk", "slot", "due")
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-slot",
                "KeySchema": [
                    {"AttributeName": "slot", "KeyType": "HASH"},
                    {"AttributeName": "due", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    yield name
    client.delete_table(TableName=name)


@contextlib.contextmanager
def stock_queries() -> Iterator[None]:
    """moto's own Query, walking every item of the table."""
    patched = Table.query
    Table.query = patched.__wrapped__  # type: ignore[attr-defined,method-assign]
    try:
        yield
    finally:
        Table.query = patched  # type: ignore[method-assign]


def _item(rng: random.Random, pk: str, sk: str) -> dict[str, Any]:
    item = {"pk": {"S": pk}, "sk": {"S": sk}, "due": {"S": f"2026-12-{rng.randrange(1, 29):02d}"}}
    if rng.random() < 0.8:  # sparse: some items are in no shard
        item["slot"] = {"S": str(rng.randrange(SHARDS))}
    return item


def _write_at_random(client: Any, table: str, rng: random.Random) -> None:
    keys = [(f"t{rng.randrange(4)}", f"i{rng.randrange(12)}") for _ in range(6)]
    for pk, sk in keys[:2]:
        client.put_item(TableName=table, Item=_item(rng, pk, sk))
    client.batch_write_item(
        RequestItems={table: [{"PutRequest": {"Item": _item(rng, pk, sk)}} for pk, sk in dict(keys[2:4]).items()]}
    )
    pk, sk = keys[4]
    key = {"pk": {"S": pk}, "sk": {"S": sk}}
    if rng.random() < 0.5:  # moved to another shard, or out of the index
        client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET slot = :s, due = :d",
            ExpressionAttributeValues={":s": {"S": str(rng.randrange(SHARDS))}, ":d": {"S": "2026-12-01"}},
        )
    else:
        client.update_item(TableName=table, Key=key, UpdateExpression="REMOVE slot")
    pk, sk = keys[5]
    client.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})
    # a transaction that applies, and one cancelled by its condition (rolled back)
    put = {"Put": {"TableName": table, "Item": _item(rng, *keys[0])}}
    moved = {
        "Update": {
            "TableName": table,
            "Key": {"pk": {"S": keys[1][0]}, "sk": {"S": keys[1][1]}},
            "UpdateExpression": "SET slot = :s",
            "ExpressionAttributeValues": {":s": {"S": str(rng.randrange(SHARDS))}},
        }
    }
    client.transact_write_items(TransactItems=[put, moved] if keys[0] != keys[1] else [put])
    refused = {**moved["Update"], "ConditionExpression": "attribute_not_exists(pk)"}
    with contextlib.suppress(client.exceptions.TransactionCanceledException):
        client.transact_write_items(TransactItems=[{"Update": refused}])


def _answers(client: Any, table: str) -> list[Any]:
    answers = []
    for shard in [*map(str, range(SHARDS)), "no-such-shard"]:
        for limit in (2, 50):
            answers.append(_pages(client, table, IndexName="by-slot", Limit=limit, slot=shard))
    for tenant in ("t0", "t1", "t2", "t3", "t9"):
        answers.append(_pages(client, table, Limit=3, pk=tenant))
    return answers


def _pages(client: Any, table: str, *, Limit: int, IndexName: str | None = None, **key: str) -> list[Any]:
    ((name, value),) = key.items()
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": f"{name} = :v",
        "ExpressionAttributeValues": {":v": {"S": value}},
        "Limit": Limit,
        **({"IndexName": IndexName} if IndexName else {}),
    }
    pages = []
    while True:
        page = client.query(**request)
        pages.append((page["Items"], page.get("LastEvaluatedKey")))
        if "LastEvaluatedKey" not in page:
            return pages
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_every_query_answers_as_moto_walking_every_item_does(client: Any, table: str) -> None:
    rng = random.Random(40)
    compared = 0
    for _ in range(ROUNDS):
        _write_at_random(client, table, rng)
        patched = _answers(client, table)
        with stock_queries():
            stock = _answers(client, table)
        assert patched == stock
        compared += sum(len(items) for answer in stock for items, _ in answer)
    assert compared > 0, "the workload left the table empty: it compared nothing"


def test_a_query_of_a_key_walks_its_own_items_not_the_table(
    client: Any, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(41)
    for _ in range(5):
        _write_at_random(client, table, rng)
    _answers(client, table)  # the index's map is built by the first Query of its attribute
    walked = Table.all_items
    walks: list[int] = []

    def counted(self: Table) -> Any:
        items = walked(self)
        walks.append(len(items))
        return items

    monkeypatch.setattr(Table, "all_items", counted)
    _write_at_random(client, table, rng)
    _answers(client, table)
    assert walks == []
    with stock_queries():
        _answers(client, table)
    assert walks, "moto's own Query no longer walks the table: the patch may go"
