"""`clockless simulate --bad-rows`: every job the template declares plants, through its demo's
`bad_rows` hook, rows its ticks find due but cannot use among the good ones; the night runs with
every delivery fault of the normal one, and the judge (clockless_tools.simulate.bad_rows) checks
that the good items took effect exactly once, every bad row is named in the ledger (and the work
DLQ of a job that fans out), and every tick that met one settled.

`make test` runs the shortest window in which every job ticks (one tenant); the four-hour night is
slow. The judge's own checks are planted below, without a simulation."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

import pytest

from clockless import format_scheduled_time
from clockless.items import FailedItem
from clockless.ledger import LedgerEntry
from clockless_tools.local.event_sources import worker_functions
from clockless_tools.simulate.bad_rows import dead_letter_keys, distinct_letters, judge_bad_rows
from clockless_tools.simulate.request import SimulationInputError, SimulationRequest, expected_ticks
from clockless_tools.template.model import Template
from tests.integration.test_simulate import DAY, FROM, TO, jobs, simulate

TEMPLATE: Final = Template.load()
TICK: Final = datetime(2026, 11, 27, 14, tzinfo=DAY.tzinfo)


def _shortest_window() -> tuple[str, str]:
    """The shortest span of whole hours on DAY in which every job of the template ticks, the earliest
    of them (14:00 to 15:00 for the examples)."""
    for hours in range(1, 25):
        for start in (DAY + timedelta(hours=h) for h in range(0, 25 - hours)):
            if all(expected_ticks(TEMPLATE, start, start + timedelta(hours=hours)).values()):
                return format_scheduled_time(start), format_scheduled_time(start + timedelta(hours=hours))
    raise AssertionError(f"some job of the template does not tick on {DAY:%Y-%m-%d}")


def _fans_out(job: str) -> bool:
    return bool(worker_functions(TEMPLATE, TEMPLATE.jobs[job].function_id))


def _judged_clean(code: int, report: dict[str, Any]) -> None:
    assert code == 0, report["proved"]
    assert set(jobs(report)) == set(TEMPLATE.jobs)
    for job, found in jobs(report).items():
        rows = found["bad_rows"]
        if not found["tables"]:  # the tick reaper: no row of its own to plant, nothing to judge
            assert rows is None, job
            continue
        # Every good item once: the tables as the reference's, no tick missed.
        assert (found["exactly_once"], found["differences"], found["ticks_missed"]) == (True, [], []), job
        assert rows["planted"], f"{job}: its demo planted no bad row"
        assert rows["in_ledger"] == rows["planted"], job
        assert rows["in_dead_letters"] == (rows["planted"] if _fans_out(job) else []), job
        assert rows["ticks_failed"] + rows["ticks_tolerated"] >= 1, job
        assert (rows["ticks_started"], rows["problems"]) == ([], []), job
    planted = sum(len(found["bad_rows"]["planted"]) for found in report["jobs"] if found["bad_rows"])
    assert f"{planted} of {planted} bad rows reported" in report["proved"]


def test_a_short_night_with_bad_rows_reports_every_one_and_applies_every_good_item_once() -> None:
    start, end = _shortest_window()

    _judged_clean(*simulate("--from", start, "--to", end, "--tenants", "1", "--bad-rows"))


@pytest.mark.slow  # the four-hour night: CI runs it
def test_a_four_hour_night_with_bad_rows_reports_every_one_and_every_tick_settles() -> None:
    _judged_clean(*simulate("--from", FROM, "--to", TO, "--tenants", "1", "--seed", "11", "--bad-rows"))


def _entry(status: str, failed: list[str]) -> LedgerEntry:
    failures = tuple(FailedItem(key, "decode", f"RowError: row T {key}: field 'x' is bad", "x", 1) for key in failed)
    summary = {"failed": len(failures)} if failures else None
    return LedgerEntry("job", TICK, status, 1, "schedule", None, None, None, summary, None, failures=failures)


@pytest.mark.parametrize(
    ("planted", "entries", "dead_letters", "problem"),
    [
        (None, [], [], "job: its demo.py has no bad_rows hook, so no bad row was planted"),
        (["t#a", "t#b"], [_entry("failed", ["t#a"])], ["t#a", "t#b"], "bad row t#b is named in no ledger entry"),
        (["t#a"], [_entry("failed", ["t#a"])], [], "bad row t#a is not in the work dead-letter queue"),
        (["t#a"], [_entry("failed", ["t#a"]), _entry("started", [])], ["t#a"], "left started, never settled"),
        (["t#a"], [_entry("skipped", ["t#a"])], ["t#a"], "1 items failed, yet the tick is skipped"),
    ],
)
def test_the_judge_catches_a_bad_row_unreported_or_a_tick_unsettled(
    planted: list[str] | None, entries: list[LedgerEntry], dead_letters: list[str], problem: str
) -> None:
    report = judge_bad_rows("job", planted, entries, dead_letters, fans_out=True, ticks_delivered=2)

    assert any(problem in found for found in report.problems), report.problems


def test_the_judge_passes_rows_reported_everywhere_and_ticks_settled_or_tolerated() -> None:
    entries = [_entry("failed", ["t#a"]), _entry("succeeded", ["t#b"]), _entry("succeeded", [])]

    report = judge_bad_rows("job", ["t#a", "t#b"], entries, ["t#b", "t#a"], fans_out=True, ticks_delivered=3)

    assert report.problems == []
    assert (report.in_ledger, report.in_dead_letters) == (["t#a", "t#b"], ["t#a", "t#b"])
    assert (report.ticks_failed, report.ticks_tolerated) == (1, 1)


def test_only_the_jobs_items_messages_name_dead_lettered_keys() -> None:
    bodies = [
        '{"kind":"items","job":"job","items":[{"key":"t#a"}],"keys":["t#a","t#b"]}',
        '{"kind":"items","job":"other","items":[{"key":"t#c"}]}',
        '{"kind":"partition","job":"job","partition":"0"}',
        "not json",
    ]

    assert dead_letter_keys(bodies, "job") == ["t#a", "t#b"]


def test_bad_rows_on_a_running_dynamodb_is_refused_before_anything_runs() -> None:
    request = SimulationRequest(
        TEMPLATE, DAY, DAY + timedelta(hours=1), endpoint="http://127.0.0.1:8765", bad_rows=True
    )

    with pytest.raises(SimulationInputError, match="--bad-rows plants rows"):
        request.validate()


def test_a_letter_sent_twice_counts_once_and_anything_else_as_it_is() -> None:
    letter = (
        '{"kind":"items","job":"job","scheduled_time":"T","partition":"3",'
        '"items":[{"key":"t#a","failure":{"attempts":%d}}]}'
    )
    other_tick = letter.replace('"T"', '"U"') % 1

    counts = distinct_letters({"Queue": [letter % 1, letter % 2, other_tick, '{"kind":"partition"}', "not json"]})

    assert counts == {"Queue": 4}
