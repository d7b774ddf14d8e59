"""The local SQS poller drains a queue into a real Powertools BatchProcessor worker the way Lambda's
poller does: BatchSize, partial batch responses, failed messages back after the visibility
timeout, maxReceiveCount to the dead-letter queue (moto's redrive), continuations in the same drain."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from clockless_tools.local.dynamodb import create_tables, delete_tables, dynamodb_client
from clockless_tools.local.poller import OUTCOME_DONE, OUTCOME_ERROR, OUTCOME_PARTIAL, Message, SqsPoller
from clockless_tools.local.queues import create_queues, queue_url, sqs_client
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT

WORKER_TEMPLATE = PROJECT_ROOT / "tests" / "fixtures" / "sqs_worker" / "template.yaml"


class Clock:
    """The poller's clock, moved by the test (the server keeps its own)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def worker_template() -> Template:
    return Template.load(Path(WORKER_TEMPLATE))


@pytest.fixture
def sqs(worker_template: Template, dynamodb_endpoint: str) -> Iterator[Any]:
    create_tables(worker_template, dynamodb_endpoint)
    create_queues(worker_template, dynamodb_endpoint)
    client = sqs_client(dynamodb_endpoint)
    yield client
    for name in ("WorkQueue", "WorkDeadLetterQueue"):
        client.delete_queue(QueueUrl=queue_url(client, name))
    delete_tables(worker_template, dynamodb_endpoint)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def poller(worker_template: Template, dynamodb_endpoint: str, sqs: Any, clock: Clock) -> SqsPoller:
    return SqsPoller(LocalLambdaRuntime(worker_template, dynamodb_endpoint), dynamodb_endpoint, clock=clock)


def send(client: Any, *bodies: dict[str, Any]) -> None:
    for body in bodies:
        client.send_message(QueueUrl=queue_url(client, "WorkQueue"), MessageBody=json.dumps(body))


def deliveries(endpoint: str) -> dict[str, int]:
    items = dynamodb_client(endpoint).scan(TableName="ItemsTable", ConsistentRead=True)["Items"]
    return {item["id"]["S"]: int(item["deliveries"]["N"]) for item in items}


def bodies_in(client: Any, queue: str) -> list[dict[str, Any]]:
    response = client.receive_message(QueueUrl=queue_url(client, queue), MaxNumberOfMessages=10, WaitTimeSeconds=0)
    return [json.loads(message["Body"]) for message in response.get("Messages") or []]


def test_batches_of_the_mapping_size_run_concurrently_and_every_message_is_deleted(
    poller: SqsPoller, sqs: Any, dynamodb_endpoint: str
) -> None:
    send(sqs, *({"id": f"m{i}"} for i in range(5)))

    invocations = poller.drain()

    # BatchSize 2, MaximumConcurrency 2: a wave of two batches of two, then the last message.
    assert [len(i.messages) for i in invocations] == [2, 2, 1]
    assert {i.outcome for i in invocations} == {OUTCOME_DONE}
    assert deliveries(dynamodb_endpoint) == {f"m{i}": 1 for i in range(5)}
    assert poller.depth()["WorkQueue"].total == 0
    assert poller.next_visible_at() is None


def test_a_reported_failure_returns_after_the_visibility_timeout_then_goes_to_the_dead_letter_queue(
    poller: SqsPoller, sqs: Any, dynamodb_endpoint: str, clock: Clock
) -> None:
    send(sqs, {"id": "ok"}, {"id": "bad", "fail": True})

    first = poller.drain()

    assert [(i.outcome, len(i.failed)) for i in first] == [(OUTCOME_PARTIAL, 1)]
    assert deliveries(dynamodb_endpoint) == {"ok": 1, "bad": 1}
    assert poller.depth()["WorkQueue"].in_flight == 1
    # Not back before the queue's VisibilityTimeout (60 s) has passed on the poller's clock.
    assert poller.next_visible_at() == clock.now + 60
    assert poller.release_due() == 0
    assert poller.drain() == []

    for receive in (2, 3):
        clock.now += 60
        assert poller.release_due() == 1
        again = poller.drain()
        assert [(m.receive_count, i.outcome) for i in again for m in i.messages] == [(receive, OUTCOME_ERROR)]

    clock.now += 60
    poller.release_due()
    # maxReceiveCount 3: the receive after the third moves it to the dead-letter queue (moto's redrive).
    assert poller.drain() == []
    assert deliveries(dynamodb_endpoint) == {"ok": 1, "bad": 3}
    assert bodies_in(sqs, "WorkDeadLetterQueue") == [{"id": "bad", "fail": True}]
    assert poller.depth()["WorkQueue"].total == 0


def test_messages_a_worker_sends_on_are_drained_in_the_same_drain(
    poller: SqsPoller, sqs: Any, dynamodb_endpoint: str
) -> None:
    send(sqs, {"id": "hop-0", "then": [{"id": "hop-1", "then": [{"id": "hop-2"}]}]})

    invocations = poller.drain()

    assert [m.json()["id"] for i in invocations for m in i.messages] == ["hop-0", "hop-1", "hop-2"]
    assert deliveries(dynamodb_endpoint) == {"hop-0": 1, "hop-1": 1, "hop-2": 1}


def test_a_function_error_or_an_unreadable_answer_leaves_the_whole_batch(
    worker_template: Template, dynamodb_endpoint: str, sqs: Any, clock: Clock
) -> None:
    answers: list[Any] = [RuntimeError("the worker crashed"), {"batchItemFailures": [{"itemIdentifier": "nope"}]}]

    def invoke(_function: str, _event: dict[str, Any], _messages: Sequence[Message]) -> tuple[Any, Any]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer, None

    poller = SqsPoller(
        LocalLambdaRuntime(worker_template, dynamodb_endpoint), dynamodb_endpoint, clock=clock, invoke=invoke
    )
    send(sqs, {"id": "a"}, {"id": "b"})

    crashed = poller.drain()
    clock.now += 60
    poller.release_due()
    unreadable = poller.drain()

    assert [(i.outcome, len(i.failed)) for i in crashed + unreadable] == [(OUTCOME_ERROR, 2), (OUTCOME_ERROR, 2)]
    assert crashed[0].error == "RuntimeError: the worker crashed"
    assert "names no message of the batch" in str(unreadable[0].error)
    assert poller.depth()["WorkQueue"].in_flight == 2
