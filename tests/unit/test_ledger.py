"""Run-ledger entries as the kit writes them and as readers see them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clockless.ledger import SUMMARY_LAST_ATTEMPT, SUMMARY_WHOLE_TICK, LedgerEntry
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
