"""The embedded DynamoDB: moto's server on loopback, with the tables template.yaml declares."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import boto3

from clockless_tools.template import LocalNames, Template

LOCAL_REGION = "us-east-1"
# Credentials the local server accepts. Setting them also means a local run can never sign a
# request with a developer's real credentials.
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "clockless-local", "AWS_SECRET_ACCESS_KEY": "clockless-local"}
_TABLE_KEYS = ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "BillingMode")


def local_environment(endpoint: str) -> dict[str, str]:
    """What a process needs to talk to the embedded DynamoDB through the standard variables."""
    return {
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
        # moto's server speaks these too (botocore names them by service id: "Secrets Manager").
        "AWS_ENDPOINT_URL_SECRETS_MANAGER": endpoint,
        "AWS_ENDPOINT_URL_LAMBDA": endpoint,
        "AWS_REGION": LOCAL_REGION,
        "AWS_DEFAULT_REGION": LOCAL_REGION,
        **LOCAL_CREDENTIALS,
    }


@contextlib.contextmanager
def patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous


def dynamodb_client(endpoint: str) -> Any:
    return local_client("dynamodb", endpoint)


def local_client(service: str, endpoint: str) -> Any:
    """A boto3 client for one service of the embedded server, signed with the local credentials."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint,
        region_name=LOCAL_REGION,
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )


def table_definition(logical_id: str, properties: Mapping[str, Any], names: LocalNames) -> dict[str, Any]:
    """A CreateTable request built from the table's own CloudFormation properties."""
    request: dict[str, Any] = {"TableName": names.table_name(logical_id)}
    for key in _TABLE_KEYS:
        if key in properties:
            request[key] = properties[key]
    request.setdefault("BillingMode", "PROVISIONED")
    if request["BillingMode"] == "PROVISIONED":
        request.setdefault("ProvisionedThroughput", properties.get("ProvisionedThroughput"))
    return request


def create_tables(template: Template, endpoint: str, names: LocalNames = LocalNames()) -> list[str]:
    """Create every table template.yaml declares, with its keys, indexes and TTL. Returns the names."""
    client = dynamodb_client(endpoint)
    existing = set(client.list_tables()["TableNames"])
    created = []
    for logical_id, properties in template.tables.items():
        definition = table_definition(logical_id, properties, names)
        name = definition["TableName"]
        if name not in existing:
            client.create_table(**definition)
        ttl = properties.get("TimeToLiveSpecification")
        if isinstance(ttl, Mapping) and ttl.get("Enabled"):
            client.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        created.append(name)
    return created


def delete_tables(template: Template, endpoint: str, names: LocalNames = LocalNames()) -> None:
    client = dynamodb_client(endpoint)
    existing = set(client.list_tables()["TableNames"])
    for logical_id in template.tables:
        if names.table_name(logical_id) in existing:
            client.delete_table(TableName=names.table_name(logical_id))


@dataclass
class EmbeddedDynamoDB:
    """moto's server in this process, on a loopback port (0 picks a free one)."""

    port: int = 0
    host: str = "127.0.0.1"

    def __post_init__(self) -> None:
        from moto.server import ThreadedMotoServer

        # One access-log line per request would bury the report.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)

        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self.endpoint = ""

    def start(self) -> EmbeddedDynamoDB:
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> EmbeddedDynamoDB:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
