"""Integration tests run the real handlers against moto's server over HTTP, with the tables
created from template.yaml's own definitions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from clockless_tools.local.dynamodb import EmbeddedDynamoDB, dynamodb_client, local_environment
from clockless_tools.local.in_process import served_in_process
from clockless_tools.local.moto_expressions import expressions_evaluated_cheaply
from clockless_tools.local.moto_serializer import attribute_values_read_directly
from clockless_tools.local.moto_transactions import transactions_snapshot_touched_items
from clockless_tools.local.poller import Invocation, SqsPoller
from clockless_tools.local.queues import sqs_client
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import Template
from tests.conftest import load_event
from tests.index_keys import example_jobs_at_one_key_per_partition
from tests.moto_backends import FreshBackends


@pytest.fixture(scope="session")
def dynamodb_server() -> Iterator[EmbeddedDynamoDB]:
    # The server as `make run` uses it: this process's requests reach it without a socket (the same
    # request and answer bytes; other processes, such as the CLI run as users run it, still come
    # over HTTP), and its transactions copy only the items they name, not every table they touch
    # (the same answers: tests/integration/test_in_process.py and test_bench.py). Unlimited, as
    # moto is, unless a test enforces DynamoDB's throughput on it (`EmbeddedDynamoDB.enforce`).
    # Each UpdateExpression parsed once, its validators' node types read once and each attribute
    # value serialized directly, as the simulator's server does (clockless_tools/local/
    # moto_expressions.py, moto_serializer.py).
    with (
        EmbeddedDynamoDB(port=0) as server,
        served_in_process(server.endpoint, server.app),
        transactions_snapshot_touched_items(),
        expressions_evaluated_cheaply(),
        attribute_values_read_directly(),
    ):
        yield server


@pytest.fixture(scope="session")
def dynamodb_endpoint(dynamodb_server: EmbeddedDynamoDB) -> str:
    return dynamodb_server.endpoint


@pytest.fixture(scope="session")
def runtime(template: Template, dynamodb_endpoint: str) -> LocalLambdaRuntime:
    return LocalLambdaRuntime(template, dynamodb_endpoint)


@pytest.fixture(autouse=True)
def local_aws(dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in local_environment(dynamodb_endpoint).items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="session")
def fresh_backends(template: Template, dynamodb_endpoint: str) -> FreshBackends:
    """The template's tables and queues, made once through the wire, to copy for each test."""
    return FreshBackends.made(template, dynamodb_endpoint)


@pytest.fixture
def tables(fresh_backends: FreshBackends, dynamodb_endpoint: str) -> Iterator[Any]:
    """Fresh tables, and the template's queues (a coordinator sends its partitions to one), for one
    test; a DynamoDB client for looking at them. Copies of empty ones put in moto's backends
    (tests/moto_backends.py: what CreateTable and CreateQueue leave there, without their requests)."""
    fresh_backends.install()
    yield dynamodb_client(dynamodb_endpoint)
    fresh_backends.drop()


@pytest.fixture
def local_queues(tables: Any, dynamodb_endpoint: str) -> Any:
    """An SQS client for the template's queues (`tables` creates them)."""
    return sqs_client(dynamodb_endpoint)


@pytest.fixture
def kit_env(tables: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Fresh tables and the kit's environment, for jobs declared in a test (no template function)."""
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", "IdempotencyTable")
    monkeypatch.setenv("IDEMPOTENCY_EXPIRY_SECONDS", "3600")
    monkeypatch.setenv("LEDGER_TABLE_NAME", "LedgerTable")
    monkeypatch.setenv("LEDGER_RETENTION_DAYS", "30")
    return tables


@pytest.fixture
def function_env(runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Apply one function's template environment, as Lambda would, for the test's duration."""

    def apply(logical_id: str) -> None:
        for name, value in runtime.environment(logical_id).items():
            monkeypatch.setenv(name, value)
        runtime.handler(logical_id)

    return apply


def scan_all(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=table):
        items.extend(page["Items"])
    return items


def delivery(sample: str, attempt: int = 1, **overrides: str) -> dict[str, Any]:
    """A sample tick of events/ delivered again as the scheduler does: this attempt number and a
    fresh execution id, the tick's identity (job, scheduled time) unchanged unless overridden."""
    return load_event(sample) | {"attempt": str(attempt), "execution_id": str(uuid.uuid4())} | overrides


def run_tick(runtime: LocalLambdaRuntime, function_id: str, event: dict[str, Any]) -> Any:
    """Deliver a tick to a scheduled function, then run its workers on what it fanned out, as
    Lambda's SQS poller would (inside the test's function environment)."""
    result = runtime.call(function_id, event)
    drain_workers(runtime)
    return result


def drain_workers(runtime: LocalLambdaRuntime) -> list[Invocation]:
    """Every message the template's SQS event source mappings can see, handed to their workers."""
    return SqsPoller(runtime, runtime.endpoint).drain()


@pytest.fixture(scope="session", autouse=True)
def example_index_keys() -> Iterator[dict[tuple[str, str], int]]:
    """The example jobs' indexes at one key per partition in this process, from the session's start
    (before any module's seeded world): a Query per key, and the jobs' own 16 per partition would
    multiply the Queries of every test running their ticks for nothing it looks at. A module that
    needs their own counts asks `tests.index_keys.at_own_counts`; the jobs' modules, more keys."""
    with example_jobs_at_one_key_per_partition() as own:
        yield own
