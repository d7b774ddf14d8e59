"""`clockless status` names a tick's failed items: the count and the first keys, in the terminal
table and in --json (the HTML page's tooltips use the same text)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

from clockless.items import FailedItem, dump_listed
from clockless.ledger import LedgerEntry
from clockless_tools.operations.status import JobStatus, failed_items_text, table_cells

TICK = datetime(2026, 12, 1, 14, tzinfo=UTC)


def _failed_tick(count: int, listed: int) -> LedgerEntry:
    failures = [
        FailedItem(f"t#{n}", "decode", f"row t#{n}: field 'due_at' is missing", "due_at") for n in range(listed)
    ]
    return LedgerEntry.from_item(
        {
            "job": {"S": "j"},
            "scheduled_time": {"S": "2026-12-01T14:00:00Z"},
            "status": {"S": "failed"},
            "attempts": {"N": "1"},
            "error": {"S": f"{count} items failed: replay them after the fix: clockless work redrive j"},
            "summary": {"S": json.dumps({"found": 10, "applied": 10 - count, "already_done": 0, "failed": count})},
            "failures": {"S": dump_listed(failures)},
        }
    )


def test_the_count_and_the_first_keys_are_shown_and_more_is_marked() -> None:
    assert failed_items_text(_failed_tick(2, 2)) == "2 items failed: t#0, t#1"
    assert failed_items_text(_failed_tick(150, 100)) == "150 items failed: t#0, t#1, t#2, …"


def test_the_table_and_the_json_carry_them() -> None:
    entry = _failed_tick(5, 5)
    status = JobStatus("j", "JFunction", "cron(0 14 * * ? *)", TICK, TICK, None, entry, [], 1, [])

    failure_column = table_cells(status)[2]
    as_json = status.as_dict()["last_failure"]

    assert failure_column[-1] == "2026-12-01T14:00:00Z: 5 items failed: t#0, t#1, t#2, …"
    assert as_json["failed_items"] == 5
    assert [f["key"] for f in as_json["failures"]] == [f"t#{n}" for n in range(5)]
    assert as_json["failures"][0]["field"] == "due_at"


def test_a_partition_that_failed_every_receive_is_named_first() -> None:
    # Given a fanned-out tick whose partition 3's last worker died (the tick reaper named it), alone
    # and beside two failed items
    exhausted = FailedItem("partition 3", "partition", "its message failed every receive: see the work DLQ")
    rows = [FailedItem(f"t#{n}", "decode", f"row t#{n}: field 'due_at' is missing", "due_at") for n in range(2)]

    def entry(failed: int, failures: list[FailedItem]) -> LedgerEntry:
        summary = {"found": 9, "failed": failed}
        return dataclasses.replace(_failed_tick(0, 0), summary=summary, failures=tuple(failures))

    alone = entry(0, [exhausted])
    status = JobStatus("j", "JFunction", "cron(0 14 * * ? *)", TICK, TICK, None, alone, [], 1, [])

    assert failed_items_text(alone) == "1 partition failed: partition 3"
    assert failed_items_text(entry(2, [exhausted, *rows])) == "1 partition and 2 items failed: partition 3, t#0, t#1"
    assert table_cells(status)[2][-1] == "2026-12-01T14:00:00Z: 1 partition failed: partition 3"
