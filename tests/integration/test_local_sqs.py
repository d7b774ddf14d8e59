"""The embedded server's SQS answers one request at a time, so a message goes to one receive, as in
SQS (clockless_tools.local.moto_sqs)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from moto.sqs.models import Message, SQSBackend

from clockless_tools.local.queues import sqs_client

RECEIVERS = 8


class Queues:
    """Queues of the tests' server made for one test, deleted after it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.urls: list[str] = []

    def create(self, **attributes: str) -> str:
        url: str = self.client.create_queue(QueueName=f"receives-{uuid.uuid4().hex[:12]}", Attributes=attributes)[
            "QueueUrl"
        ]
        self.urls.append(url)
        return url


@pytest.fixture
def sqs(dynamodb_endpoint: str) -> Any:
    return sqs_client(dynamodb_endpoint)


@pytest.fixture
def queues(sqs: Any) -> Iterator[Queues]:
    made = Queues(sqs)
    yield made
    for url in made.urls:
        sqs.delete_queue(QueueUrl=url)


@pytest.fixture
def wide_race(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's check that a message is visible and its marking it received, 50 ms apart."""
    marked = Message.mark_received

    def mark_slowly(message: Message, visibility_timeout: int | None = None) -> None:
        time.sleep(0.05)
        marked(message, visibility_timeout)

    monkeypatch.setattr(Message, "mark_received", mark_slowly)


@pytest.fixture
def stock_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own SQS requests, unlocked (planted: the races the patch closes)."""
    for name, method in list(vars(SQSBackend).items()):
        if stock := getattr(method, "__wrapped__", None):
            monkeypatch.setattr(SQSBackend, name, stock)


def _received_at_once(sqs: Any, url: str, **receive: Any) -> list[str]:
    barrier = threading.Barrier(RECEIVERS)

    def receive_one(_: int) -> list[str]:
        barrier.wait()
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, **receive).get("Messages", [])
        return [message["Body"] for message in messages]

    with ThreadPoolExecutor(max_workers=RECEIVERS) as pool:
        return [body for bodies in pool.map(receive_one, range(RECEIVERS)) for body in bodies]


@pytest.mark.usefixtures("wide_race")
def test_concurrent_receives_take_a_message_once(sqs: Any, queues: Queues) -> None:
    url = queues.create(VisibilityTimeout="600")
    sqs.send_message(QueueUrl=url, MessageBody="m")

    assert _received_at_once(sqs, url) == ["m"]


@pytest.mark.usefixtures("wide_race", "stock_moto")
def test_stock_moto_takes_it_as_often_as_it_is_received_at_once(sqs: Any, queues: Queues) -> None:
    """If moto ever closes the race itself, this fails and the patch can go."""
    url = queues.create(VisibilityTimeout="600")
    sqs.send_message(QueueUrl=url, MessageBody="m")

    assert len(_received_at_once(sqs, url)) > 1


def test_a_long_poll_gets_a_message_sent_while_it_waits_and_holds_no_other_receive_up(sqs: Any, queues: Queues) -> None:
    waiting, other = queues.create(), queues.create()
    sqs.send_message(QueueUrl=other, MessageBody="o")
    with ThreadPoolExecutor(max_workers=1) as pool:
        polled = pool.submit(sqs.receive_message, QueueUrl=waiting, WaitTimeSeconds=5)
        time.sleep(0.3)
        started = time.monotonic()
        assert [m["Body"] for m in sqs.receive_message(QueueUrl=other)["Messages"]] == ["o"]
        assert time.monotonic() - started < 2, "a receive waited behind another queue's long poll"
        sqs.send_message(QueueUrl=waiting, MessageBody="w")
        assert [m["Body"] for m in polled.result(timeout=10)["Messages"]] == ["w"]


def test_an_empty_long_poll_still_waits_its_seconds(sqs: Any, queues: Queues) -> None:
    url = queues.create()
    started = time.monotonic()

    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []
    assert time.monotonic() - started >= 1
