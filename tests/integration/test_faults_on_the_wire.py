"""The fault injector against the embedded DynamoDB, through botocore's real retry loop: a lost
answer is resent with the same bytes, and a resent transaction is answered as DynamoDB does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pynamodb.attributes import UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from clockless_tools.simulate.faults import FaultInjector, FaultKind
from tests.integration.conftest import scan_all

TABLE = "WindowsTable"  # any table of the template: (program_key, start_date)


class _Window(Model):
    class Meta:
        table_name = TABLE

    program_key = UnicodeAttribute(hash_key=True)
    start_date = UnicodeAttribute(range_key=True)


def _put(key: str) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": TABLE,
            "Item": {"program_key": {"S": key}, "start_date": {"S": "2026-11-28"}},
            "ConditionExpression": "attribute_not_exists(program_key)",
        }
    }


@pytest.fixture
def faults() -> Iterator[FaultInjector]:
    injector = FaultInjector()
    with injector.installed():
        yield injector
        injector.disarm()


def test_a_conditional_transaction_whose_answer_was_lost_succeeds_once(tables: Any, faults: FaultInjector) -> None:
    faults.arm(1, FaultKind.LOST_RESPONSE)

    tables.transact_write_items(TransactItems=[_put("p-1")])  # no TransactionCanceledException

    assert faults.counts.answered_from_token == 1  # botocore resent the same token
    assert len(scan_all(tables, TABLE)) == 1


def test_pynamodb_transactions_are_answered_from_their_token_too(tables: Any, faults: FaultInjector) -> None:
    _Window._connection = None
    faults.arm(1, FaultKind.LOST_RESPONSE)

    with TransactWrite(connection=Connection()) as transaction:
        transaction.save(_Window("p-2", "2026-11-28"), condition=_Window.program_key.does_not_exist())

    assert faults.counts.answered_from_token == 1
    assert len(scan_all(tables, TABLE)) == 1


def test_a_conditional_put_whose_answer_was_lost_meets_its_own_write(tables: Any, faults: FaultInjector) -> None:
    """Why the kit's claim carries its own token: a PutItem has none, and its resend fails."""
    faults.arm(1, FaultKind.LOST_RESPONSE)

    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        tables.put_item(**_put("p-3")["Put"])

    assert len(scan_all(tables, TABLE)) == 1
