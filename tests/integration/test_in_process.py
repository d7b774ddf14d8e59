"""The embedded server reached in process (`make run`'s transport) answers as it does over HTTP."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.httpsession import URLLib3Session

from clockless_tools.local.dynamodb import EmbeddedDynamoDB, local_client
from clockless_tools.local.in_process import served_in_process

TABLE = "InProcessTable"


def _make_table(client: Any) -> None:
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _claim(client: Any, owner: str) -> dict[str, Any]:
    """A conditional write, as the kit's claims are: the second one is refused with the item."""
    try:
        client.put_item(
            TableName=TABLE,
            Item={"id": {"S": "tick"}, "owner": {"S": owner}},
            ConditionExpression="attribute_not_exists(id)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        return {"refused": error.response["Error"]["Code"], "item": error.response.get("Item")}
    return {"claimed": owner}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_answers_in_process_are_the_servers_answers_without_its_socket() -> None:
    # Given an embedded server whose socket is closed: only the in-process path can reach it
    server = EmbeddedDynamoDB().start()
    server.stop()
    client = local_client("dynamodb", server.endpoint)
    sqs = local_client("sqs", server.endpoint)

    with served_in_process(server.endpoint, server.app):
        # When a table is made, claimed twice and read back; and a queue made and used
        _make_table(client)
        try:
            first, second = _claim(client, "first"), _claim(client, "second")
            item = client.get_item(TableName=TABLE, Key={"id": {"S": "tick"}}, ConsistentRead=True)["Item"]
            url = sqs.create_queue(QueueName="in-process-queue")["QueueUrl"]
            sqs.send_message(QueueUrl=url, MessageBody="partition 3")
            received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        finally:
            client.delete_table(TableName=TABLE)

    # Then each answer is DynamoDB's and SQS's as botocore reads them off the wire
    assert first == {"claimed": "first"}
    assert second == {
        "refused": "ConditionalCheckFailedException",
        "item": {"id": {"S": "tick"}, "owner": {"S": "first"}},
    }
    assert item == {"id": {"S": "tick"}, "owner": {"S": "first"}}
    assert url.startswith(server.endpoint + "/")  # the queue URL names the endpoint, as over HTTP
    assert [message["Body"] for message in received] == ["partition 3"]


def test_other_endpoints_still_go_over_the_network_and_the_stock_session_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given one endpoint served in process, and another on a port nothing listens on
    stock = URLLib3Session.send
    served = EmbeddedDynamoDB().start()
    try:
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # one refusal is enough; no backoff
        elsewhere = local_client("dynamodb", f"http://127.0.0.1:{_free_port()}")
        with served_in_process(served.endpoint, served.app):
            # When a request goes to the other one, Then it meets the network's refusal
            with pytest.raises(EndpointConnectionError):
                elsewhere.list_tables()
            # And the same endpoint cannot be served twice
            with (
                pytest.raises(RuntimeError, match="already served in process"),
                served_in_process(served.endpoint + "/", served.app),
            ):
                pass
    finally:
        served.stop()

    # Then botocore's own HTTP session is back once the block ends
    assert URLLib3Session.send is stock
