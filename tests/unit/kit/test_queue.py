"""Sending work messages: 10 per request, entries SQS reports failed sent again, failed items
split under SQS's message size."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from clockless.fanout.messages import KIND_PARTITION, WorkMessage
from clockless.fanout.queue import MAX_BODY_BYTES, DeadLetters, QueueSendError, WorkQueue, split_items
from clockless.fanout.writer import Entry
from clockless.throttle import Budget
from clockless.tick import Trigger
from tests.unit.kit.fake_clock import FakeClock
from tests.unit.kit.toy import Context


class FlakySqs:
    """Reports the entries named in `fail` failed, for `times` requests each."""

    def __init__(self, fail: set[str], times: int) -> None:
        self.failures_left = dict.fromkeys(fail, times)
        self.requests: list[list[str]] = []
        self.delivered: list[str] = []

    def send_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        self.requests.append([entry["MessageBody"] for entry in Entries])
        failed = []
        for entry in Entries:
            body = entry["MessageBody"]
            if self.failures_left.get(body, 0) > 0:
                self.failures_left[body] -= 1
                failed.append(
                    {"Id": entry["Id"], "Code": "InternalError", "Message": "try again", "SenderFault": False}
                )
            else:
                self.delivered.append(body)
        return {"Successful": [], "Failed": failed}


def test_messages_go_ten_per_request() -> None:
    sqs = FlakySqs(set(), 0)
    bodies = [f"m{i}" for i in range(23)]
    assert WorkQueue(sqs, "url").send_all(bodies) == 3
    assert [len(r) for r in sqs.requests] == [10, 10, 3]
    assert sqs.delivered == bodies


def test_entries_reported_failed_are_sent_again_alone() -> None:
    sqs = FlakySqs({"m3"}, times=1)
    assert WorkQueue(sqs, "url").send_all([f"m{i}" for i in range(5)]) == 2
    assert sqs.requests[1] == ["m3"]
    assert sorted(sqs.delivered) == [f"m{i}" for i in range(5)]


def _budget(seconds: float) -> tuple[Budget, FakeClock]:
    clock = FakeClock()
    return Budget(Context(remaining_ms=int(seconds * 1000)), 0.0, clock), clock


def test_entries_failing_for_sqs_reasons_are_sent_again_after_backoff_until_they_go() -> None:
    sqs = FlakySqs({"m1"}, times=10)
    budget, clock = _budget(60)

    assert WorkQueue(sqs, "url").send_all(["m0", "m1"], budget=budget) == 11

    assert sorted(sqs.delivered) == ["m0", "m1"]
    assert len(clock.slept) == 10  # waited between resends, on the attempt's clock


def test_entries_failing_past_the_attempts_time_raise_for_the_coordinator_to_fail() -> None:
    sqs = FlakySqs({"m1"}, times=10_000)
    budget, clock = _budget(2)

    with pytest.raises(QueueSendError, match=r"1 message\(s\) not sent to url within the attempt's time: Internal"):
        WorkQueue(sqs, "url").send_all(["m0", "m1"], budget=budget)
    assert clock.waited <= 2


def test_an_entry_sqs_refuses_for_itself_fails_at_once_naming_why() -> None:
    sqs = FlakySqs(set(), 0)
    refusing = sqs.send_message_batch

    def send_message_batch(*, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        refusing(QueueUrl=QueueUrl, Entries=Entries)
        return {"Failed": [{"Id": "1", "Code": "InvalidParameterValue", "Message": "too long", "SenderFault": True}]}

    sqs.send_message_batch = send_message_batch  # type: ignore[method-assign]
    with pytest.raises(QueueSendError, match=r"SQS refused 1 message\(s\) for url: InvalidParameterValue: too long"):
        WorkQueue(sqs, "url").send_all(["m0", "m1"], budget=_budget(60)[0])
    assert len(sqs.requests) == 1


def test_a_throttled_send_is_waited_out_within_the_attempt() -> None:
    sqs = FlakySqs(set(), 0)
    throttles = [2]
    sending = sqs.send_message_batch

    def send_message_batch(*, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        if throttles[0]:
            throttles[0] -= 1
            raise ClientError({"Error": {"Code": "RequestThrottled", "Message": "slow down"}}, "SendMessageBatch")
        return sending(QueueUrl=QueueUrl, Entries=Entries)

    sqs.send_message_batch = send_message_batch  # type: ignore[method-assign]
    budget, clock = _budget(60)

    assert WorkQueue(sqs, "url").send_all(["m0", "m1"], budget=budget) == 1
    assert sqs.delivered == ["m0", "m1"]
    assert len(clock.slept) == 2


def test_failed_items_are_split_under_the_message_size() -> None:
    items = [{"id": i, "pad": "x" * 50_000} for i in range(9)]
    groups = split_items(items, envelope_bytes=300)
    assert sum(len(g) for g in groups) == 9
    assert all(300 + len(json.dumps(g)) <= MAX_BODY_BYTES for g in groups)
    assert len(groups) == 3


def test_failed_items_throttled_on_their_way_to_the_dlq_are_waited_out() -> None:
    class ThrottledOnce:
        def __init__(self) -> None:
            self.bodies: list[str] = []
            self.throttles = 1

        def send_message(self, *, QueueUrl: str, MessageBody: str) -> dict[str, Any]:
            if self.throttles:
                self.throttles -= 1
                raise ClientError({"Error": {"Code": "RequestThrottled", "Message": "slow down"}}, "SendMessage")
            self.bodies.append(MessageBody)
            return {}

    sqs = ThrottledOnce()
    budget, clock = _budget(60)
    message = WorkMessage(KIND_PARTITION, "toy", datetime(2026, 12, 1, 2, tzinfo=UTC), Trigger.SCHEDULE, "0", {})

    DeadLetters(sqs, "dlq", budget).send(message, dict, [Entry("k1", [], {"id": "k1"})], "ValidationException: too big")

    assert len(sqs.bodies) == 1
    assert json.loads(sqs.bodies[0])["items"] == [{"id": "k1"}]
    assert len(clock.slept) == 1
