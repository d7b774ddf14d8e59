"""The embedded DynamoDB: moto's server on loopback, with the tables template.yaml declares."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import boto3
from werkzeug.serving import BaseWSGIServer, make_server

from clockless_tools.local.capacity import CapacitySettings, DynamoDBCapacity, Start, capacity_settings
from clockless_tools.local.moto_queries import queries_read_their_key
from clockless_tools.local.moto_sqs import requests_one_at_a_time
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template

# The region of every local resource: the one LocalNames puts in their ARNs.
LOCAL_REGION: Final = LocalNames.region
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
        "AWS_ENDPOINT_URL_SQS": endpoint,
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
    if "GlobalSecondaryIndexes" in request:
        # WarmThroughput is a deploy-time declaration (a condition on a parameter); moto has no
        # capacity, and the capacity emulator takes the warm rate as a setting.
        request["GlobalSecondaryIndexes"] = [
            {name: value for name, value in index.items() if name != "WarmThroughput"}
            for index in request["GlobalSecondaryIndexes"]
        ]
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


class SerializedDynamoDB:
    """WSGI middleware that lets one DynamoDB request through at a time.

    moto evaluates a write's condition and then applies the write as separate steps, with no
    lock, so two concurrent conditional writes to one item can both pass. DynamoDB never lets
    them. Every exactly-once claim made here rests on conditional writes, so the embedded
    DynamoDB serializes its requests (other services pass straight through).
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], capacity: DynamoDBCapacity | None = None) -> None:
        self.app = app
        self.lock = threading.Lock()
        # DynamoDB's write throughput rules, enforced in front of moto (None: unlimited, as moto is)
        self.capacity = capacity

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("DynamoDB_"):
            return self.app(environ, start_response)
        with self.lock:
            # The body is produced inside the lock: the write is done when the lock is released.
            if self.capacity is not None:
                return self.capacity.serve(environ, start_response, self.app)
            return list(self.app(environ, start_response))


def make_moto_server(host: str, port: int, capacity: CapacitySettings | None = None) -> BaseWSGIServer:
    """moto's server app, as `moto.server` builds it, behind `SerializedDynamoDB` (and DynamoDB's
    write throughput rules, when `capacity` says which); its SQS answers one request at a time
    (`clockless_tools.local.moto_sqs`), and its Queries walk only the asked key's items
    (`clockless_tools.local.moto_queries`)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

    requests_one_at_a_time()
    queries_read_their_key()
    _action_names_remembered()

    class HostsRemembered(DomainDispatcherApplication):
        """moto finds a request's backend from its host name by listing its own package directory
        (a `stat` per service, on every request: a twentieth of `make run`'s CPU); the answer for a
        host never changes while the server runs, so it is worked out once per host."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._backends: dict[str | None, Any] = {}

        def get_backend_for_host(self, host: str | None) -> Any:
            if host not in self._backends:  # under moto's own lock (get_application)
                self._backends[host] = super().get_backend_for_host(host)
            return self._backends[host]

    # One access-log line per request would bury the reports.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = SerializedDynamoDB(
        HostsRemembered(create_backend_app),
        None if capacity is None else DynamoDBCapacity(capacity),
    )
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    server.serialized = app  # type: ignore[attr-defined]
    return server


def _action_names_remembered() -> None:
    """moto finds whether a request's action is one its response class answers by listing the
    class's members (`inspect.getmembers`, a few hundred) on every request: a twenty-fifth of
    `make run`'s CPU. A class's functions do not change while the server runs (this project patches
    moto's backends, not its response classes), so each class's names are listed once."""
    from moto.core import responses

    stock = getattr(responses, "method_names_from_class")  # noqa: B009 - moto imports it, not exports it
    if getattr(stock, "cache_info", None) is not None:
        return
    setattr(responses, "method_names_from_class", functools.cache(lambda clazz: frozenset(stock(clazz))))  # noqa: B010


@dataclass
class EmbeddedDynamoDB:
    """moto's server in this process, on a loopback port (0 picks a free one)."""

    port: int = 0
    host: str = "127.0.0.1"
    endpoint: str = ""
    # DynamoDB's write throughput rules (clockless_tools.local.capacity); None: unlimited
    capacity: CapacitySettings | None = None

    @property
    def throughput(self) -> DynamoDBCapacity | None:
        """The running emulator's buckets and what they refused, when capacity is enforced."""
        serialized: SerializedDynamoDB = getattr(self._server, "serialized")  # noqa: B009
        return serialized.capacity

    def enforce(self, settings: CapacitySettings | None) -> DynamoDBCapacity | None:
        """From now on, enforce DynamoDB's write throughput rules (None: unlimited again), e.g.
        once the demo data is seeded."""
        serialized: SerializedDynamoDB = getattr(self._server, "serialized")  # noqa: B009
        with serialized.lock:
            serialized.capacity = None if settings is None else DynamoDBCapacity(settings)
        return serialized.capacity

    def start(self) -> EmbeddedDynamoDB:
        self._server = make_moto_server(self.host, self.port, self.capacity)
        self._thread = threading.Thread(target=self._server.serve_forever, name="embedded-dynamodb", daemon=True)
        self._thread.start()
        self.endpoint = f"http://{self.host}:{self._server.server_port}"
        return self

    @property
    def app(self) -> Callable[..., Iterable[bytes]]:
        """The WSGI app the server runs (for `clockless_tools.local.in_process`)."""
        return self._server.app

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()

    def __enter__(self) -> EmbeddedDynamoDB:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """`python -m clockless_tools.local.dynamodb --port N`: the embedded DynamoDB as a process of its own."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--capacity", choices=[s.value for s in Start], help="enforce DynamoDB's write throughput")
    parser.add_argument("--scale", type=float, default=1.0, help="divide every throughput limit by this")
    parser.add_argument("--warm-units", type=float, default=None, help="warm start: write units/s per table and index")
    arguments = parser.parse_args(argv)
    capacity = capacity_settings(arguments.capacity, arguments.scale, arguments.warm_units)
    make_moto_server(arguments.host, arguments.port, capacity).serve_forever()


if __name__ == "__main__":
    main()
