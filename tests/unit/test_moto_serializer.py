"""clockless_tools/local/moto_serializer.py answers what stock moto answers: the same bytes for items
holding every type of attribute value, through every DynamoDB read that returns items, and an
error's answer too."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.serialize import BaseJSONSerializer

from clockless_tools.local.moto_serializer import attribute_values_read_directly

TABLE = "Things"
EVERY_TYPE: dict[str, Any] = {
    "pk": "thing#1",
    "sk": Decimal(7),
    "text": "a",
    "empty_text": "",
    "number": Decimal("12.50"),
    "blob": b"\x00\xffbytes",
    "strings": {"x", "y"},
    "numbers": {Decimal(1), Decimal(2)},
    "blobs": {b"one", b"two"},
    "map": {"inner": {"deeper": [Decimal(1), "two", None, True, {"b": b"z"}]}, "empty": {}},
    "list": [Decimal(1), "two", False, None, [], {"k": {"n"}}],
    "nothing": None,
    "yes": True,
    "no": False,
}


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        resource = boto3.resource("dynamodb")
        resource.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        resource.Table(TABLE).put_item(Item=EVERY_TYPE)
        resource.Table(TABLE).put_item(Item={"pk": "thing#2", "sk": Decimal(1), "blob": b"b"})
        yield boto3.client("dynamodb")


def answers(client: Any) -> list[bytes]:
    """The raw body of each read that returns items, and of a refused conditional write."""
    bodies: list[bytes] = []

    def keep(http_response: Any, **_: Any) -> None:
        bodies.append(http_response.content)

    client.meta.events.register("after-call.dynamodb", keep)
    key = {"pk": {"S": "thing#1"}, "sk": {"N": "7"}}
    reads: list[Callable[[], Any]] = [
        lambda: client.get_item(TableName=TABLE, Key=key),
        lambda: client.query(
            TableName=TABLE, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "thing#1"}}
        ),
        lambda: client.scan(TableName=TABLE),
        lambda: client.batch_get_item(RequestItems={TABLE: {"Keys": [key]}}),
        lambda: client.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": key}}]),
        lambda: client.update_item(
            TableName=TABLE,
            Key=key,
            UpdateExpression="SET #t = :t",
            ExpressionAttributeNames={"#t": "text"},
            ExpressionAttributeValues={":t": {"S": "a"}},
            ReturnValues="ALL_OLD",
        ),
    ]
    for read in reads:
        read()
    with pytest.raises(client.exceptions.ConditionalCheckFailedException):
        client.put_item(
            TableName=TABLE,
            Item=key,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    client.meta.events.unregister("after-call.dynamodb", keep)
    return bodies


def test_every_read_answers_the_same_bytes_with_and_without_it(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Stock moto, even where this worker's integration server holds the patch for its session.
    installed = BaseJSONSerializer.__dict__["_serialize_type_structure"]
    monkeypatch.setattr(BaseJSONSerializer, "_serialize_type_structure", getattr(installed, "stock", installed))
    stock = answers(dynamodb)
    original = BaseJSONSerializer.__dict__["_serialize_type_structure"]
    with attribute_values_read_directly():
        assert BaseJSONSerializer.__dict__["_serialize_type_structure"] is not original
        patched = answers(dynamodb)
    assert BaseJSONSerializer.__dict__["_serialize_type_structure"] is original
    assert len(stock) == 7
    assert patched == stock
    # The answers hold every type, blobs base64 as DynamoDB's JSON has them.
    assert base64.b64encode(b"\x00\xffbytes") in stock[0]
    for kind in (b'"SS"', b'"NS"', b'"BS"', b'"M"', b'"L"', b'"NULL"', b'"BOOL"'):
        assert kind in stock[0]
