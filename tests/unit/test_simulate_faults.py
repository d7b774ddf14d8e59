"""simulate/faults.py: the tables a request names, and the fault injector on botocore's send path,
one SDK attempt at a time, without a network."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

from clockless_tools.simulate.faults import (
    AttemptDied,
    FaultInjector,
    FaultKind,
    InjectedFault,
    RequestRecord,
    tables_in_request,
)
from tests.fault_sweep import EVERY_REQUEST, aimed_at, one_per_path


@dataclass
class _Request:
    body: bytes
    headers: dict[str, bytes] = field(default_factory=dict)
    url: str = "http://127.0.0.1:1"


def _request(payload: dict[str, Any], operation: str = "Query", call: str = "call-1") -> _Request:
    return _Request(
        json.dumps(payload).encode(),
        {"X-Amz-Target": f"DynamoDB_20120810.{operation}".encode(), "amz-sdk-invocation-id": call.encode()},
    )


class _Raw:
    def __init__(self, content: bytes) -> None:
        self.content = content

    def stream(self, **_: Any) -> Any:
        yield self.content


class _DynamoDB:
    """Stands in for the endpoint's real send: counts what reached it."""

    def __init__(self) -> None:
        self.received: list[bytes] = []

    def __call__(self, _endpoint: Any, request: _Request) -> AWSResponse:
        self.received.append(request.body)
        headers: Any = {}
        return AWSResponse(request.url, 200, headers, _Raw(b'{"n": %d}' % len(self.received)))


def _send(faults: FaultInjector, dynamodb: Callable[[Any, _Request], AWSResponse], request: _Request) -> AWSResponse:
    return faults._send(dynamodb, None, request)  # type: ignore[arg-type]


def test_the_tables_a_request_names_are_found_in_every_operation_shape() -> None:
    assert tables_in_request(_request({"TableName": "A"})) == {"A"}
    assert tables_in_request(
        _request({"TransactItems": [{"Put": {"TableName": "A"}}, {"Update": {"TableName": "B"}}]})
    ) == {"A", "B"}
    assert tables_in_request(_request({"RequestItems": {"C": []}})) == {"C"}
    assert tables_in_request(_Request(b"not json")) == set()


def test_an_error_fires_after_the_nth_domain_request_sparing_bookkeeping() -> None:
    faults, dynamodb = FaultInjector(spared_tables={"IdempotencyTable"}), _DynamoDB()
    faults.arm(2)

    _send(faults, dynamodb, _request({"TableName": "IdempotencyTable"}, "PutItem", "claim"))  # not counted
    _send(faults, dynamodb, _request({"TableName": "Sessions"}, "DeleteItem", "delete"))
    with pytest.raises(InjectedFault, match="Sessions") as fired:
        _send(faults, dynamodb, _request({"TableName": "Sessions"}, call="query"))

    assert fired.value.writes_done == 1  # the delete had taken effect: a partial run
    assert len(dynamodb.received) == 3  # the faulted request was answered first
    assert faults.disarm() is True
    assert faults.disarm() is False


@pytest.mark.parametrize(
    ("kind", "raised"), [(FaultKind.REFUSED, EndpointConnectionError), (FaultKind.THROTTLED, None)], ids=str
)
def test_a_refused_or_throttled_request_never_reaches_dynamodb_on_any_attempt(
    kind: FaultKind, raised: type[Exception] | None
) -> None:
    faults, dynamodb = FaultInjector(), _DynamoDB()
    faults.arm(1, kind)

    for _sdk_attempt in range(3):
        if raised is None:
            response = _send(faults, dynamodb, _request({"TableName": "T"}, "PutItem"))
            assert response.status_code == 400
            assert b"ThrottlingException" in response.content
        else:
            with pytest.raises(raised):
                _send(faults, dynamodb, _request({"TableName": "T"}, "PutItem"))

    assert dynamodb.received == []
    assert faults.requests()[0].fault is kind


def test_a_transaction_is_throttled_as_dynamodb_throttles_it() -> None:
    # Given a transaction of three actions throttled as DynamoDB throttles one
    faults, dynamodb = FaultInjector(), _DynamoDB()
    faults.arm(1, FaultKind.TRANSACTION_THROTTLED)
    actions = [{"Put": {"TableName": "T", "Item": {}}}] * 3
    # When it is sent
    response = _send(faults, dynamodb, _request({"TransactItems": actions}, "TransactWriteItems"))
    # Then it is cancelled with ThrottlingError on its first action (a reason botocore does not retry)
    body = json.loads(response.content)
    assert response.status_code == 400
    assert body["__type"].endswith("#TransactionCanceledException")
    assert [r["Code"] for r in body["CancellationReasons"]] == ["ThrottlingError", "None", "None"]
    assert dynamodb.received == []
    # and any other request meets ThrottlingException
    faults.arm(1, FaultKind.TRANSACTION_THROTTLED)
    other = _send(faults, dynamodb, _request({"TableName": "T"}, "UpdateItem", call="call-2"))
    assert b"ThrottlingException" in other.content


def test_a_lost_response_is_applied_then_resent_with_the_same_bytes() -> None:
    faults, dynamodb = FaultInjector(), _DynamoDB()
    faults.arm(1, FaultKind.LOST_RESPONSE)
    request = _request({"TableName": "T"}, "PutItem")

    with pytest.raises(ConnectionClosedError):
        _send(faults, dynamodb, request)
    answer = _send(faults, dynamodb, request)  # botocore's retry of the same call

    assert dynamodb.received == [request.body, request.body]
    assert answer.status_code == 200
    assert len(faults.requests()) == 1  # one request, two sends


def test_a_lost_response_whose_resends_are_throttled_was_applied_once() -> None:
    faults, dynamodb = FaultInjector(), _DynamoDB()
    faults.arm(1, FaultKind.LOST_THEN_THROTTLED)
    request = _request({"TableName": "T"}, "UpdateItem")

    with pytest.raises(ConnectionClosedError):
        _send(faults, dynamodb, request)
    throttled = [_send(faults, dynamodb, request).status_code for _ in range(3)]

    assert throttled == [400, 400, 400]
    assert len(dynamodb.received) == 1


def test_nothing_is_sent_after_the_attempt_died() -> None:
    faults, dynamodb = FaultInjector(), _DynamoDB()
    faults.arm(1, FaultKind.DIES_AFTER)

    with pytest.raises(AttemptDied):
        _send(faults, dynamodb, _request({"TableName": "T"}, "PutItem"))
    with pytest.raises(AttemptDied):
        _send(faults, dynamodb, _request({"TableName": "T"}, "DeleteItem", call="cleanup"))

    assert len(dynamodb.received) == 1
    faults.disarm()
    _send(faults, dynamodb, _request({"TableName": "T"}, call="next attempt"))
    assert len(dynamodb.received) == 2


def _transaction(token: str, value: str = "a", call: str = "call-1") -> _Request:
    return _request(
        {"TransactItems": [{"Put": {"TableName": "T", "Item": {"id": {"S": value}}}}], "ClientRequestToken": token},
        "TransactWriteItems",
        call,
    )


def test_a_transaction_resent_with_its_token_is_answered_as_dynamodb_does_for_ten_minutes() -> None:
    faults, dynamodb = FaultInjector(), _DynamoDB()
    with time_machine.travel(datetime(2026, 11, 28, 14, tzinfo=UTC), tick=False) as clock:
        first = _send(faults, dynamodb, _transaction("token-1"))
        resent = _send(faults, dynamodb, _transaction("token-1"))
        mismatch = _send(faults, dynamodb, _transaction("token-1", value="b"))
        clock.shift(timedelta(minutes=10))
        expired = _send(faults, dynamodb, _transaction("token-1"))

    assert (first.content, resent.content) == (b'{"n": 1}', b'{"n": 1}')
    assert mismatch.status_code == 400
    assert b"IdempotentParameterMismatch" in mismatch.content
    assert expired.content == b'{"n": 2}'  # after the window: a new request
    assert len(dynamodb.received) == 2
    assert faults.counts.answered_from_token == 1


def test_armed_for_every_thread_a_fault_reaches_a_request_sent_from_a_thread_the_delivery_started() -> None:
    faults, dynamodb = FaultInjector(), _DynamoDB()
    faults.arm(2, FaultKind.DIES_AFTER, count_spared=True, every_thread=True)
    outcome: list[BaseException] = []

    def lane() -> None:
        try:
            _send(faults, dynamodb, _request({"TableName": "Sessions"}, "TransactWriteItems", "lane-tx"))
        except BaseException as error:  # the test reads what the lane met
            outcome.append(error)

    _send(faults, dynamodb, _request({"TableName": "Ledger"}, "UpdateItem", "lease"))
    thread = threading.Thread(target=lane)
    thread.start()
    thread.join()

    assert [type(error) for error in outcome] == [AttemptDied]
    with pytest.raises(AttemptDied):  # the whole attempt is dead, on every thread
        _send(faults, dynamodb, _request({"TableName": "Ledger"}, "UpdateItem", "cursor"))
    assert faults.disarm() is True
    # Disarmed everywhere: another thread's request is forwarded untouched.
    _send(faults, dynamodb, _request({"TableName": "Sessions"}, "Query", "later"))
    assert len(dynamodb.received) == 3


def test_armed_for_one_thread_another_threads_requests_pass_untouched() -> None:
    faults, dynamodb = FaultInjector(), _DynamoDB()
    faults.arm(1, FaultKind.DIES_AFTER, count_spared=True)
    thread = threading.Thread(target=_send, args=(faults, dynamodb, _request({"TableName": "Sessions"}, call="other")))
    thread.start()
    thread.join()

    assert faults.disarm() is False
    assert len(dynamodb.received) == 1


def test_a_sweep_one_per_path_faults_each_step_once_and_leaves_repeated_cycles_to_the_exhaustive_one() -> None:
    # Given a partition run: lease, two pages (read, transaction, cursor), done, finisher
    ledger, items = frozenset({"LedgerTable"}), frozenset({"ItemsTable", "LedgerTable"})
    steps = [
        ("UpdateItem", ledger),  # 1 lease
        ("Query", items),  # 2 page 1
        ("TransactWriteItems", items),  # 3
        ("UpdateItem", ledger),  # 4 cursor
        ("Query", items),  # 5 page 2: a repeat of the cycle
        ("TransactWriteItems", items),  # 6 repeat
        ("UpdateItem", ledger),  # 7 repeat
        ("UpdateItem", ledger),  # 8 done: an update after an update, a step of its own
        ("GetItem", ledger),  # 9 finisher
        ("UpdateItem", ledger),  # 10 the last
    ]
    requests = [RequestRecord(index, operation, tables) for index, (operation, tables) in enumerate(steps, 1)]

    assert one_per_path(requests) == [1, 2, 3, 4, 8, 9, 10]
    assert aimed_at(requests, EVERY_REQUEST) == list(range(1, 11))


class _Index:
    """Stands in for DynamoDB answering a Query of an index: the rows it holds now."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def __call__(self, _endpoint: Any, request: _Request) -> AWSResponse:
        body = json.dumps({"Items": self.rows, "Count": len(self.rows), "ScannedCount": len(self.rows)})
        headers: Any = {}
        return AWSResponse(request.url, 200, headers, _Raw(body.encode()))


def _page(call: str, *, index: str | None = "due-by-time", start: str | None = None) -> _Request:
    payload: dict[str, Any] = {"TableName": "Items", "KeyConditionExpression": "#s = :s"}
    if index is not None:
        payload["IndexName"] = index
    if start is not None:
        payload["ExclusiveStartKey"] = {"id": {"S": start}}
    return _request(payload, call=call)


def _ids(response: AWSResponse) -> list[str]:
    return [row["id"]["S"] for row in json.loads(response.content)["Items"]]


def test_a_lagging_index_shows_a_page_the_rows_that_left_it_since_it_was_read() -> None:
    # Given a page of an index read once, and then one of its rows applied (gone from the index)
    faults, index = FaultInjector(), _Index([{"id": {"S": "a"}}, {"id": {"S": "b"}}])
    faults.watch()
    assert _ids(_send(faults, index, _page("first read"))) == ["a", "b"]
    index.rows = [{"id": {"S": "b"}}]
    # When the same page is read again through a lagging index, and another page of it
    faults.arm(1, FaultKind.STALE_ROWS)
    again = _send(faults, index, _page("re-read"))
    faults.arm(1, FaultKind.STALE_ROWS)
    other_page = _send(faults, index, _page("other page", start="b"))
    # Then the re-read still shows the applied row where it sorted; a page that never showed it does not
    assert _ids(again) == ["a", "b"]
    assert json.loads(again.content)["Count"] == 2
    assert _ids(other_page) == ["b"]
    assert faults.counts.stale_rows_shown == 1


def test_a_row_not_yet_visible_is_missing_from_its_page_and_kept_aside() -> None:
    faults, index = FaultInjector(), _Index([{"id": {"S": "a"}}, {"id": {"S": "b"}}])
    faults.arm(1, FaultKind.NOT_YET_VISIBLE)

    page = _send(faults, index, _page("read"))

    assert _ids(page) == ["b"]
    assert faults.hidden_rows == [{"id": {"S": "a"}}]
    assert faults.requests()[0].index_name == "due-by-time"
    assert faults.requests()[0].fault is FaultKind.NOT_YET_VISIBLE


def test_an_index_lag_aimed_at_a_read_of_the_table_itself_changes_nothing() -> None:
    faults, index = FaultInjector(), _Index([{"id": {"S": "a"}}])
    faults.arm(1, FaultKind.NOT_YET_VISIBLE)

    page = _send(faults, index, _page("base table read", index=None))

    assert _ids(page) == ["a"]
    assert faults.disarm() is False
