"""A job without fan-out: `JobRun.each` decodes and applies each row on its own, so a bad row fails
alone, and the tick settles by the job's tolerance: `failed` with the items listed (a re-run of
the tick after the fix applies them once), or `succeeded` with them listed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pytest

from clockless.fanout.keys import tick_key
from clockless.items import ItemsFailedError, parse_tolerance
from clockless.job import ScheduledJob
from clockless.ledger import LedgerEntry
from clockless.run import JobRun
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import Context

JOB: Final = "plain-job"
SCHEDULED: Final = "2026-12-01T02:00:00Z"
TICK: Final = {"job": JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}


class Table:
    """Rows in memory: a row is applied once; one whose `n` is not a number does not decode."""

    def __init__(self, rows: dict[str, Any]) -> None:
        self.rows = rows
        self.applied: dict[str, int] = {}

    def due(self) -> list[tuple[str, Any]]:
        return [(key, value) for key, value in self.rows.items() if key not in self.applied]

    @staticmethod
    def item_of(row: tuple[str, Any]) -> tuple[str, int]:
        key, value = row
        if not isinstance(value, int):
            raise ValueError(f"row {key}: field 'n' must be a number, got {value!r}")
        return key, value

    def apply(self, item: tuple[str, int]) -> bool:
        if item[1] < 0:
            raise ArithmeticError(f"{item[0]}: n must not be negative")
        self.applied[item[0]] = self.applied.get(item[0], 0) + 1
        return True


def _job(table: Table, tolerated: int | str | None = None) -> Any:
    job = ScheduledJob(JOB, tolerated_failures=tolerated)

    @job.handler
    def handler(run: JobRun) -> Mapping[str, Any]:
        outcomes = run.each(table.due(), row_key=lambda row: row[0], item_of=table.item_of, apply=table.apply)
        return outcomes.as_summary()

    return handler


def _entry(aws: Aws) -> LedgerEntry:
    return LedgerEntry.from_item(aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(JOB, SCHEDULED))["Item"])


def test_a_bad_row_fails_alone_the_tick_fails_listing_it_and_a_rerun_after_the_fix_applies_it_once(aws: Aws) -> None:
    table = Table({"a": 1, "bad": "x", "c": 3, "minus": -1, "e": 5})

    with pytest.raises(ItemsFailedError, match=r"^2 items failed: replay them after the fix: clockless run-now "):
        _job(table)(dict(TICK), Context())

    assert table.applied == {"a": 1, "c": 1, "e": 1}
    entry = _entry(aws)
    assert entry.status == "failed"
    assert [(f.key, f.reason, f.field) for f in entry.failures] == [("bad", "decode", None), ("minus", "domain", None)]
    assert "field 'n'" in entry.failures[0].message

    # The fix: the row corrected, the negative one now allowed; the tick run again, twice.
    table.rows.update({"bad": 2, "minus": 4})
    _job(table)(dict(TICK), Context())
    again = _job(table)(dict(TICK), Context())

    assert table.applied == dict.fromkeys(("a", "c", "e", "bad", "minus"), 1)
    assert again["outcome"] == "duplicate"
    entry = _entry(aws)
    assert (entry.status, entry.error, entry.failures) == ("succeeded", None, ())


def test_within_its_tolerance_the_tick_succeeds_with_the_failures_listed(aws: Aws) -> None:
    table = Table({"a": 1, "bad": "x", "c": 3})

    result = _job(table, tolerated="40%")(dict(TICK), Context())

    assert result["summary"] == {"found": 3, "applied": 2, "already_done": 0, "failed": 1}
    entry = _entry(aws)
    assert entry.status == "succeeded"
    assert [f.key for f in entry.failures] == ["bad"]


@pytest.mark.parametrize("value", [-1, "2", "x%", "101%", True, 1.5])
def test_a_tolerance_that_is_neither_a_count_nor_a_percentage_is_refused_naming_the_job(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^job 'j': tolerated_failures must be a count >= 0 or a percentage"):
        parse_tolerance(value, job="j")


def test_an_infrastructure_error_fails_the_run_not_the_item() -> None:
    from botocore.exceptions import EndpointConnectionError

    from clockless.items import apply_each

    def lost(item: tuple[str, int]) -> bool:
        raise EndpointConnectionError(endpoint_url="https://dynamodb")

    with pytest.raises(EndpointConnectionError):
        apply_each([("a", 1)], row_key=lambda row: row[0], item_of=Table.item_of, apply=lost)
    with pytest.raises(TimeoutError):
        apply_each([("a", 1)], row_key=lambda row: row[0], item_of=Table.item_of, apply=_times_out)


def _times_out(item: tuple[str, int]) -> bool:
    raise TimeoutError("read timed out")
