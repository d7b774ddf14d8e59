"""Run-ledger entries as the kit writes them and as readers see them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from clockless.items import MAX_LISTED, FailedItem, short
from clockless.ledger import SUMMARY_LAST_ATTEMPT, SUMMARY_WHOLE_TICK, LedgerEntry, RunLedger
from clockless.tick import Tick, Trigger
from tests.jobs import DAY, HOUR, job_where

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)


def _item(**extra: dict[str, str]) -> dict[str, Any]:
    return {
        "job": {"S": HOURLY_JOB.name},
        "scheduled_time": {"S": "2026-11-29T09:00:00Z"},
        "status": {"S": "succeeded"},
        "attempts": {"N": "2"},
        **extra,
    }


@pytest.mark.parametrize("scope", [SUMMARY_WHOLE_TICK, SUMMARY_LAST_ATTEMPT])
def test_the_summary_scope_is_read_as_written(scope: str) -> None:
    entry = LedgerEntry.from_item(_item(summary={"S": json.dumps({"deleted": 1})}, summary_scope={"S": scope}))

    assert entry.summary == {"deleted": 1}
    assert entry.summary_scope == scope


@pytest.mark.parametrize(("attempts", "scope"), [("1", SUMMARY_WHOLE_TICK), ("2", SUMMARY_LAST_ATTEMPT)])
def test_an_entry_written_before_summary_scopes_existed_says_what_its_attempts_imply(attempts: str, scope: str) -> None:
    entry = LedgerEntry.from_item(_item(summary={"S": "{}"}, attempts={"N": attempts}))

    assert entry.summary_scope == scope


def test_an_entry_without_a_summary_has_no_scope() -> None:
    assert LedgerEntry.from_item(_item(status={"S": "started"})).summary_scope is None


# DynamoDB's item size limit: an entry over it is refused whole, and the tick could never settle.
MAX_ITEM_BYTES = 400 * 1024


def _item_bytes(update: dict[str, Any]) -> int:
    """An upper bound of the item an update writes: its key and every value it sets, as JSON."""
    return len(json.dumps([update["Key"], update["ExpressionAttributeValues"]]).encode())


def test_a_tick_with_thousands_of_failed_items_keeps_its_ledger_entry_under_dynamodbs_item_limit() -> None:
    # Given 5,000 failed items whose keys are as long as DynamoDB's keys may be (2 KB + 1 KB)
    failures = [
        FailedItem(f"{'t' * 2048}#{n:05d}{'s' * 1024}", "decode", short("x" * 10_000), "started_at")
        for n in range(5000)
    ]
    ledger = RunLedger("LedgerTable", client=None, retention_seconds=3600)
    tick = Tick(HOURLY_JOB.name, datetime(2026, 11, 29, 9, tzinfo=UTC), None, 1, None, Trigger.SCHEDULE)
    result = {
        "job": HOURLY_JOB.name,
        "scheduled_time": "2026-11-29T09:00:00Z",
        "finished_at": "2026-11-29T09:01:00Z",
        "duration_ms": 1,
        "summary": {"failed": len(failures)},
        "failures": [failure.as_record() for failure in failures],
    }
    # When the kit writes it failed, or succeeded within a tolerance
    failed = ledger.failed_update(tick, "claim", "5000 items failed", duration_ms=1, failures=failures)
    succeeded = ledger.succeeded_update(result)
    # Then both stay under the limit (the first MAX_LISTED listed), and the count is every item's
    assert _item_bytes(failed) < MAX_ITEM_BYTES
    assert _item_bytes(succeeded) < MAX_ITEM_BYTES
    assert len(json.loads(succeeded["ExpressionAttributeValues"][":failures"]["S"])) == MAX_LISTED
    entry = LedgerEntry.from_item(
        _item(
            summary={"S": succeeded["ExpressionAttributeValues"][":summary"]["S"]},
            failures=succeeded["ExpressionAttributeValues"][":failures"],
        )
    )
    assert entry.failed_items == 5000
    assert len(entry.failures) == MAX_LISTED
