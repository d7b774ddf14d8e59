"""The batch writer against a scripted client: what each cancellation reason does to the items of
a transaction, and what is counted (in the same transaction) for them."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from clockless.fanout.pacing import Pacer, PacingSettings
from clockless.fanout.partition import PartitionAccounting
from clockless.fanout.retry import WorkRetriesSpent
from clockless.fanout.store import PartitionStore
from clockless.fanout.types import Counters
from clockless.fanout.writer import (
    MAX_ITEM_ACTIONS,
    AccountingConflict,
    BatchWriter,
    Entry,
    pack,
)
from clockless.items import FailedItem
from clockless.throttle import Budget, BudgetSpent, client_request_token
from tests.unit.kit.fake_clock import FakeClock
from tests.unit.kit.toy import Context

Answer = Callable[[list[dict[str, Any]]], None]


def _cancelled(codes: Sequence[str]) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": [{"Code": code, "Message": f"{code} here"} for code in codes],
        },
        "TransactWriteItems",
    )


def _error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"{code} message"}}, "TransactWriteItems")


class ScriptedClient:
    """Answers each transaction with the next scripted answer (None: applied), and keeps them."""

    def __init__(self, *answers: Answer | BaseException | None) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[list[dict[str, Any]], str]] = []
        self.applied: list[list[dict[str, Any]]] = []

    def transact_write_items(self, *, TransactItems: list[dict[str, Any]], ClientRequestToken: str) -> dict[str, Any]:
        self.sent.append((TransactItems, ClientRequestToken))
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, BaseException):
            raise answer
        if answer is not None:
            answer(TransactItems)
        self.applied.append(TransactItems)
        return {}


def reasons_by_item(codes: dict[str, str], accounting: int = 1) -> Answer:
    """Cancel with `codes[item key]` on that item's actions ('None' for the others)."""

    def answer(transact_items: list[dict[str, Any]]) -> None:
        found = []
        for action in transact_items[: len(transact_items) - accounting]:
            key = action["Update"]["Key"]["k"]["S"]
            found.append(codes.get(key, "None"))
        raise _cancelled([*found, *["None"] * accounting])

    return answer


def entries(*keys: str, actions: int = 1) -> list[Entry]:
    return [
        Entry(key, [{"Update": {"TableName": "t", "Key": {"k": {"S": key}}, "n": n}} for n in range(actions)], key)
        for key in keys
    ]


class Accounting:
    """Counts as the lane record does, and records failures as the partition record does."""

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]:
        return [{"Count": {"lane": lane, "applied": list(applied), "done": list(already_done), "failed": list(failed)}}]


def _writer(client: ScriptedClient, dead: list[tuple[list[str], str]] | None = None, **kwargs: Any) -> BatchWriter:
    sink = dead if dead is not None else []
    return BatchWriter(
        client,
        Accounting(),
        on_failed=lambda items, reason: sink.append(([e.key for e in items], reason)),
        clock=kwargs.pop("clock", FakeClock()),
        concurrency=1,
        **kwargs,
    )


def _count(transact_items: list[dict[str, Any]]) -> dict[str, Any]:
    return dict(transact_items[-1]["Count"])


def test_items_are_packed_whole_into_99_actions() -> None:
    batches = pack(entries(*(f"k{i}" for i in range(100)), actions=2))
    assert [sum(len(e.actions) for e in batch) for batch in batches] == [98, 98, 4]
    assert [len(batch) for batch in pack(entries(*(f"k{i}" for i in range(200))))] == [99, 99, 2]


def test_a_clean_batch_is_one_transaction_counted_in_itself() -> None:
    client = ScriptedClient()
    counters = _writer(client).apply(entries("a", "b", "c"))
    assert counters == Counters(applied=3)
    (sent, token) = client.sent[0]
    assert len(client.sent) == 1
    assert _count(sent) == {"lane": 0, "applied": ["a", "b", "c"], "done": [], "failed": []}
    assert token == client_request_token(sent)
    assert len(token) == 36


def test_items_found_done_are_removed_and_counted_already_done() -> None:
    client = ScriptedClient(reasons_by_item({"b": "ConditionalCheckFailed"}))
    counters = _writer(client).apply(entries("a", "b", "c"))
    assert counters == Counters(applied=2, already_done=1)
    assert _count(client.applied[0]) == {"lane": 0, "applied": ["a", "c"], "done": ["b"], "failed": []}


def test_an_item_with_one_action_found_done_is_done_whole() -> None:
    def answer(transact_items: list[dict[str, Any]]) -> None:
        raise _cancelled(["None", "ConditionalCheckFailed", "None", "None", "None"])

    client = ScriptedClient(answer)
    counters = _writer(client).apply(entries("a", "b", actions=2))
    assert counters == Counters(applied=1, already_done=1)
    assert len(client.applied[0]) == 3  # b's two actions left out, both


def test_a_conflict_resends_the_same_items_with_the_same_token() -> None:
    client = ScriptedClient(reasons_by_item({"a": "TransactionConflict"}))
    counters = _writer(client).apply(entries("a", "b"))
    assert counters == Counters(applied=2)
    (first, first_token), (second, second_token) = client.sent
    assert first == second
    assert first_token == second_token


def test_throttling_until_the_sdk_gives_up_is_resent_and_counted_once() -> None:
    client = ScriptedClient(_error("ProvisionedThroughputExceededException"), _error("ThrottlingException"))
    counters = _writer(client).apply(entries("a"))
    assert counters == Counters(applied=1)
    assert len({token for _, token in client.sent}) == 1
    assert len(client.applied) == 1


def test_a_connection_lost_is_resent_with_the_same_token() -> None:
    client = ScriptedClient(EndpointConnectionError(endpoint_url="http://dynamodb"))
    assert _writer(client).apply(entries("a")) == Counters(applied=1)
    assert client.sent[0] == client.sent[1]


def test_a_batch_in_conflict_on_every_attempt_raises_for_redelivery() -> None:
    client = ScriptedClient(*[reasons_by_item({"a": "TransactionConflict"})] * 3)
    with pytest.raises(WorkRetriesSpent, match="3 times"):
        _writer(client, max_attempts=3).apply(entries("a"))
    assert client.applied == []


def test_throttles_are_not_attempts_they_are_waited_out_within_the_budget() -> None:
    # Given a transaction throttled 20 times (more than max_attempts), in each of DynamoDB's shapes
    shapes: list[Answer | BaseException | None] = [
        _error("ThrottlingException"),
        _error("ProvisionedThroughputExceededException"),
        _error("RequestLimitExceeded"),
        reasons_by_item({"a": "ThrottlingError"}),
    ]
    client = ScriptedClient(*(shapes * 5))
    clock = FakeClock()
    budget = Budget(Context(remaining_ms=300_000), margin_s=30, clock=clock)
    # When the writer sends it
    counters = _writer(client, max_attempts=3, clock=clock, budget=budget).apply(entries("a", "b"))
    # Then it is applied once, with the same token every time, after backoff that never sleeps for real
    assert counters == Counters(applied=2)
    assert len(client.sent) == 21
    assert len({token for _, token in client.sent}) == 1
    assert len(clock.slept) == 20
    assert 0 < clock.waited < 270


def test_a_throttle_that_outlasts_the_budget_raises_budget_spent_naming_the_table() -> None:
    client = ScriptedClient(*[reasons_by_item({"a": "ThrottlingError"})] * 1000)
    clock = FakeClock()
    budget = Budget(Context(remaining_ms=60_000), margin_s=30, clock=clock)
    with pytest.raises(BudgetSpent) as spent:
        _writer(client, clock=clock, budget=budget).apply(entries("a", "b"))
    assert client.applied == []
    # the wait stopped before the margin: the run has its 30 s to hand on
    assert clock.waited <= 30
    assert spent.value.description == "TransactionCanceledException (ThrottlingError) on t"


def test_a_throttle_beside_a_conflict_is_waited_out_not_counted_as_an_attempt() -> None:
    mixed = reasons_by_item({"a": "ThrottlingError", "b": "TransactionConflict"})
    client = ScriptedClient(*[mixed] * 5)
    counters = _writer(client, max_attempts=2).apply(entries("a", "b", "c"))
    assert counters == Counters(applied=3)


def test_a_throttle_beside_a_condition_failure_settles_the_done_item_and_resends_the_rest() -> None:
    client = ScriptedClient(reasons_by_item({"a": "ThrottlingError", "b": "ConditionalCheckFailed"}))
    counters = _writer(client).apply(entries("a", "b"))
    assert counters == Counters(applied=1, already_done=1)
    assert _count(client.applied[0]) == {"lane": 0, "applied": ["a"], "done": ["b"], "failed": []}


def test_the_writer_paces_transactions_and_slows_down_on_a_throttle() -> None:
    clock = FakeClock()
    pacer = Pacer(PacingSettings(max_units_per_s=100, min_units_per_s=10, increase_units_per_s=5), clock)
    client = ScriptedClient(None, _error("ThrottlingException"))
    writer = _writer(client, clock=clock, pacer=pacer, units_per_item=2)
    # 99 items of one action: 198 units a transaction; the bucket holds 100 (one second)
    writer.apply(entries(*(f"k{i}" for i in range(99))))
    assert clock.waited == pytest.approx(0.98)
    writer.apply(entries(*(f"j{i}" for i in range(99))))
    assert pacer.throttles == 1
    assert pacer.rate == 50 + 5  # halved by the throttle, one step back up after the resend applied


def test_an_item_refused_for_its_own_reason_fails_alone_to_the_dlq_and_is_counted() -> None:
    dead: list[tuple[list[str], str]] = []
    client = ScriptedClient(reasons_by_item({"b": "ItemCollectionSizeLimitExceeded"}))
    counters = _writer(client, dead).apply(entries("a", "b", "c"))
    assert counters == Counters(applied=2, failed=1)
    assert dead == [(["b"], "ItemCollectionSizeLimitExceeded: ItemCollectionSizeLimitExceeded here")]
    assert _count(client.applied[0]) == {"lane": 0, "applied": ["a", "c"], "done": [], "failed": ["b"]}


def test_a_request_refused_whole_is_bisected_down_to_the_item() -> None:
    def refuse_d(transact_items: list[dict[str, Any]]) -> None:
        if any(a.get("Update", {}).get("Key", {}).get("k", {}).get("S") == "d" for a in transact_items):
            raise _error("ValidationException")

    dead: list[tuple[list[str], str]] = []
    client = ScriptedClient(*[refuse_d] * 20)
    counters = _writer(client, dead).apply(entries("a", "b", "c", "d", "e"))
    assert counters == Counters(applied=4, failed=1)
    assert dead == [(["d"], "ValidationException: ValidationException message")]
    applied = sorted(key for items in client.applied for key in _count(items)["applied"])
    assert applied == ["a", "b", "c", "e"]
    assert sum(len(_count(items)["failed"]) for items in client.applied) == 1


def test_a_failing_accounting_condition_is_raised() -> None:
    client = ScriptedClient(lambda items: (_ for _ in ()).throw(_cancelled(["None", "ConditionalCheckFailed"])))
    with pytest.raises(AccountingConflict):
        _writer(client).apply(entries("a"))


def test_an_error_that_is_no_item_s_fault_is_raised() -> None:
    client = ScriptedClient(_error("AccessDeniedException"))
    with pytest.raises(ClientError, match="AccessDenied"):
        _writer(client).apply(entries("a"))


def test_an_item_too_big_for_a_transaction_fails_without_being_sent() -> None:
    dead: list[tuple[list[str], str]] = []
    client = ScriptedClient()
    big = entries("big", actions=MAX_ITEM_ACTIONS + 1)
    counters = _writer(client, dead).apply([*big, *entries("a")])
    assert counters == Counters(applied=1, failed=1)
    assert dead[0][0] == ["big"]
    assert all(len(items) <= MAX_ITEM_ACTIONS + 1 for items in client.applied)


def test_the_token_follows_the_content() -> None:
    one = [{"Put": {"TableName": "t", "Item": {"k": {"S": "a"}}}}]
    assert client_request_token(one) == client_request_token([dict(one[0])])
    assert client_request_token(one) != client_request_token([{"Put": {"TableName": "t", "Item": {"k": {"S": "b"}}}}])


def test_an_item_with_nothing_to_write_is_counted_already_done() -> None:
    client = ScriptedClient()
    nothing = [Entry("empty", [], "empty")]
    counters = _writer(client).apply([*nothing, *entries("a")])
    assert counters == Counters(applied=1, already_done=1)
    assert _count(client.applied[0]) == {"lane": 0, "applied": [], "done": ["empty"], "failed": []}


# DynamoDB's limits on one TransactWriteItems: 100 actions, 4 MB, and any expression string 4 KB.
MAX_TRANSACTION_ACTIONS = 100
MAX_EXPRESSION_BYTES = 4096


def test_a_page_of_a_thousand_bad_rows_is_counted_within_dynamodbs_transaction_limits() -> None:
    # Given a page whose 1,000 rows all failed before any write (none decodes), and the partition
    # record's own accounting (its condition names each failed key, so a repeat counts nothing)
    client = ScriptedClient()
    records = PartitionStore(client, "LedgerTable", "job", "2026-12-01T03:00:00Z", "0", "me", 3600)
    writer = BatchWriter(client, PartitionAccounting(records), on_failed=lambda items, reason: None, concurrency=1)
    keys = [f"tenant-01#15#session-{n:05d}" for n in range(1000)]
    page = [Entry(key, [], None, FailedItem(key, "decode", "field 'started_at' missing")) for key in keys]
    # When the writer counts them
    counters = writer.apply(page)
    # Then each is counted failed once, in transactions DynamoDB accepts
    assert counters == Counters(failed=1000)
    counted = [key for sent, _ in client.sent for key in sent[0]["Update"]["ExpressionAttributeValues"][":keys"]["SS"]]
    assert sorted(counted) == keys
    for sent, _ in client.sent:
        assert len(sent) <= MAX_TRANSACTION_ACTIONS
        for action in sent:
            for name in ("ConditionExpression", "UpdateExpression"):
                assert len(action["Update"].get(name, "").encode()) <= MAX_EXPRESSION_BYTES, name


MAX_TRANSACTION_BYTES = 4 * 1024 * 1024


class SizedClient(ScriptedClient):
    """Refuses a transaction over 4 MB as DynamoDB does: ValidationException, no per-item reasons."""

    def transact_write_items(self, *, TransactItems: list[dict[str, Any]], ClientRequestToken: str) -> dict[str, Any]:
        if len(json.dumps(TransactItems).encode()) > MAX_TRANSACTION_BYTES:
            self.sent.append((TransactItems, ClientRequestToken))
            raise ClientError(
                {"Error": {"Code": "ValidationException", "Message": "Transaction request cannot be larger than 4 MB"}},
                "TransactWriteItems",
            )
        return super().transact_write_items(TransactItems=TransactItems, ClientRequestToken=ClientRequestToken)


def _sized(key: str, kilobytes: int) -> Entry:
    return Entry(key, [{"Update": {"TableName": "t", "Key": {"k": {"S": key}}, "v": "x" * (kilobytes * 1024)}}], key)


def test_a_partition_whose_items_exceed_4_mb_together_is_applied_and_an_item_over_it_alone_fails_by_name() -> None:
    # Given 60 items of 100 KB (6 MB in one batch of 99 actions) and one item whose write is 5 MB
    client, dead = SizedClient(), list[tuple[list[str], str]]()
    page = [_sized(f"k{n:02d}", 100) for n in range(60)] + [_sized("huge", 5 * 1024)]
    # When the writer applies them
    counters = _writer(client, dead).apply(page)
    # Then every item that fits a transaction is applied once (the refused batch halved until its
    # halves fit), the one that cannot fits no transaction and fails alone, named, and nothing is stuck
    applied = [key for sent in client.applied for key in _count(sent)["applied"]]
    assert sorted(applied) == [f"k{n:02d}" for n in range(60)]
    assert counters == Counters(applied=60, failed=1)
    assert [keys for keys, _ in dead] == [["huge"]]
    assert "larger than 4 MB" in dead[0][1]
