"""simulate/faults.py: the tables a request names, and faults armed after the nth domain response."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from clockless_tools.simulate.faults import FaultInjector, InjectedFault, tables_in_request


@dataclass
class _Request:
    body: bytes
    headers: dict[str, bytes] = field(default_factory=dict)


def _request(payload: object, operation: str = "Query") -> _Request:
    return _Request(json.dumps(payload).encode(), {"X-Amz-Target": f"DynamoDB_20120810.{operation}".encode()})


def test_the_tables_a_request_names_are_found_in_every_operation_shape() -> None:
    assert tables_in_request(_request({"TableName": "A"})) == {"A"}
    assert tables_in_request(
        _request({"TransactItems": [{"Put": {"TableName": "A"}}, {"Update": {"TableName": "B"}}]})
    ) == {"A", "B"}
    assert tables_in_request(_request({"RequestItems": {"C": []}})) == {"C"}
    assert tables_in_request(_Request(b"not json")) == set()


def test_an_armed_fault_fires_after_the_nth_domain_response_only() -> None:
    faults = FaultInjector(spared_tables={"IdempotencyTable"})
    faults.arm(2)

    faults._after_response(_request({"TableName": "IdempotencyTable"}, "PutItem"))  # bookkeeping: not counted
    faults._after_response(_request({"TableName": "Sessions"}, "DeleteItem"))
    with pytest.raises(InjectedFault, match="Sessions") as fired:
        faults._after_response(_request({"TableName": "Sessions"}))
    faults._after_response(_request({"TableName": "Sessions"}))  # fires once

    assert fired.value.writes_done == 1  # the delete had taken effect: a partial run

    assert faults.disarm() is True
    assert faults.disarm() is False
