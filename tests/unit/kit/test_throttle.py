"""What a throttle is (each of DynamoDB's shapes, and a cancelled transaction with mixed reasons),
and waiting one out within an attempt's budget on a fake clock."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import TransactWriteError

from clockless.throttle import (
    Budget,
    BudgetSpent,
    ThrottleRetryingClient,
    describe_throttle,
    is_throttle,
    retry_throttled,
    throttled_tables,
)
from tests.unit.kit.fake_clock import FakeClock
from tests.unit.kit.toy import Context


def _error(code: str, reasons: Sequence[str] = ()) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": f"{code} here"}}
    if reasons:
        response["CancellationReasons"] = [{"Code": reason} for reason in reasons]
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [
        _error("ThrottlingException"),
        _error("ProvisionedThroughputExceededException"),
        _error("RequestLimitExceeded"),
        _error("TransactionCanceledException", ["ThrottlingError", "None"]),
        _error("TransactionCanceledException", ["None", "ProvisionedThroughputExceeded"]),
        _error("TransactionCanceledException", ["RequestLimitExceeded"]),
        _error("TransactionCanceledException", ["ThrottlingError", "TransactionConflict", "None"]),
    ],
    ids=lambda e: f"{e.response['Error']['Code']}{e.response.get('CancellationReasons', '')}",
)
def test_each_shape_of_a_throttle_is_a_throttle(error: ClientError) -> None:
    assert is_throttle(error)


@pytest.mark.parametrize(
    "error",
    [
        _error("ValidationException"),
        _error("ConditionalCheckFailedException"),
        _error("TransactionCanceledException", ["ConditionalCheckFailed", "None"]),
        _error("TransactionCanceledException", ["TransactionConflict", "None"]),
        # mixed: the failed condition or the invalid item decides, not the throttle beside it
        _error("TransactionCanceledException", ["ThrottlingError", "ConditionalCheckFailed"]),
        _error("TransactionCanceledException", ["ValidationError", "ThrottlingError"]),
        _error("TransactionCanceledException", ["ItemCollectionSizeLimitExceeded", "ThrottlingError"]),
        _error("TransactionCanceledException"),
    ],
    ids=lambda e: f"{e.response['Error']['Code']}{e.response.get('CancellationReasons', '')}",
)
def test_a_refusal_for_the_request_itself_is_not_a_throttle(error: ClientError) -> None:
    assert not is_throttle(error)


def test_a_throttle_inside_a_pynamodb_error_is_a_throttle() -> None:
    wrapped = TransactWriteError("Failed to write transaction items", cause=_error("ThrottlingException"))
    assert is_throttle(wrapped)
    assert not is_throttle(RuntimeError("ThrottlingException"))


def test_a_throttle_names_the_tables_of_its_throttled_actions() -> None:
    request = {
        "TransactItems": [
            {"Update": {"TableName": "Programs"}},
            {"Put": {"TableName": "Windows"}},
            {"Update": {"TableName": "Ledger"}},
        ]
    }
    error = _error("TransactionCanceledException", ["None", "ThrottlingError", "None"])
    assert throttled_tables(request, error) == ["Windows"]
    assert describe_throttle(error, ["Windows"]) == "TransactionCanceledException (ThrottlingError) on Windows"
    assert throttled_tables({"TableName": "Ledger"}, _error("ThrottlingException")) == ["Ledger"]


class Flaky:
    """Raises each scripted error once, then answers."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def test_throttles_are_waited_out_with_growing_capped_backoff() -> None:
    clock = FakeClock()
    call = Flaky(*[_error("ThrottlingException")] * 12)
    budget = Budget(Context(remaining_ms=300_000), margin_s=30, clock=clock)
    assert retry_throttled(call, budget=budget, what="a write") == "done"
    assert call.calls == 13
    assert len(clock.slept) == 12
    assert max(clock.slept) <= 5.0  # each wait capped
    assert clock.waited < 270


def test_a_throttle_outlasting_the_budget_is_budget_spent_not_an_error() -> None:
    clock = FakeClock()
    call = Flaky(*[_error("TransactionCanceledException", ["ThrottlingError"])] * 10_000)
    budget = Budget(Context(remaining_ms=40_000), margin_s=30, clock=clock)
    with pytest.raises(BudgetSpent) as spent:
        retry_throttled(call, budget=budget, what="the lease")
    assert clock.waited <= 10
    assert spent.value.what == "the lease"
    assert budget.left_s() < 5


def test_anything_else_is_raised_at_once() -> None:
    clock = FakeClock()
    call = Flaky(_error("ValidationException"))
    with pytest.raises(ClientError, match="ValidationException"):
        retry_throttled(call, budget=Budget(Context(), margin_s=30, clock=clock), what="a write")
    assert clock.slept == []


def test_the_budget_is_the_smaller_of_the_clock_and_the_context() -> None:
    clock = FakeClock()
    context = Context(remaining_ms=100_000)
    budget = Budget(context, margin_s=30, clock=clock)
    assert budget.left_s() == 70
    clock.sleep(20)
    assert budget.left_s() == 50
    context.remaining_ms = 40_000  # the real attempt is further on than the fake clock says
    assert budget.left_s() == 10
    assert budget.with_margin(3).left_s() == 37
    assert not budget.spent
    clock.sleep(60)
    assert budget.spent


class ThrottledTwice:
    """A client whose update_item is throttled twice; `exceptions` as botocore has them."""

    exceptions = "the client's exceptions"

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def update_item(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        if len(self.requests) <= 2:
            raise _error("ProvisionedThroughputExceededException")
        return {"Attributes": {}}


def test_the_retrying_client_resends_the_same_request_and_keeps_the_exceptions() -> None:
    client = ThrottledTwice()
    retrying = ThrottleRetryingClient(client, Budget(Context(), margin_s=30, clock=FakeClock()))
    assert retrying.update_item(TableName="Ledger", Key={"k": {"S": "a"}}) == {"Attributes": {}}
    assert len(client.requests) == 3
    assert all(r == client.requests[0] for r in client.requests)
    assert retrying.exceptions == "the client's exceptions"


def test_the_retrying_client_names_the_table_when_its_budget_is_spent() -> None:
    client = ThrottledTwice()
    retrying = ThrottleRetryingClient(client, Budget(Context(remaining_ms=30_000), margin_s=30, clock=FakeClock()))
    with pytest.raises(BudgetSpent) as spent:
        retrying.update_item(TableName="Ledger", Key={"k": {"S": "a"}})
    assert spent.value.description == "ProvisionedThroughputExceededException on Ledger"
