"""The slow night's judge (clockless_tools.simulate.slow_night): what the ledger must say of a tick
the overlap policy held back, each contradiction named."""

from __future__ import annotations

from typing import Any

from clockless_tools.simulate.slow_night import judge_overlap, overlap_skipped, started_by_release

FIRST, SECOND, THIRD = "2026-11-27T10:00:00Z", "2026-11-27T11:00:00Z", "2026-11-27T12:00:00Z"


def _night() -> dict[str, dict[str, Any]]:
    return {
        FIRST: {"status": "succeeded", "started_at": "2026-11-27T10:00:05Z", "finished_at": "2026-11-27T12:30:00Z"},
        SECOND: {
            "status": "succeeded",
            "overlap_with": FIRST,
            "released_by": FIRST,
            "started_at": "2026-11-27T12:30:00Z",
            "finished_at": "2026-11-27T12:30:02Z",
        },
        THIRD: {"status": "skipped", "reason": f"overlap: {SECOND} already buffered", "overlap_with": SECOND},
    }


def test_a_night_as_the_policy_says_has_nothing_to_answer_for() -> None:
    entries = _night()

    assert judge_overlap("nightly", [THIRD], [SECOND], entries) == []
    assert overlap_skipped(entries) == {THIRD}
    assert started_by_release(entries) == {SECOND}


def test_a_skipped_tick_without_its_reason_in_the_ledger_is_named() -> None:
    entries = _night()
    entries[THIRD] = {"status": "skipped", "reason": "skipped by clockless backfill"}

    assert judge_overlap("nightly", [THIRD], [SECOND], entries) == [
        f"nightly@{THIRD}: answered skipped, the ledger says skipped (skipped by clockless backfill)"
    ]
    assert overlap_skipped(entries) == set()


def test_a_buffered_tick_never_run_or_started_before_the_earlier_settled_is_named() -> None:
    never_run = _night()
    never_run[SECOND] = {"status": "buffered", "overlap_with": FIRST, "reason": "overlap: waiting"}
    too_early = _night()
    too_early[SECOND]["started_at"] = "2026-11-27T11:00:00Z"

    assert judge_overlap("nightly", [], [SECOND], never_run) == [
        f"nightly@{SECOND}: buffered, then buffered (overlap: waiting), not succeeded after its release"
    ]
    assert judge_overlap("nightly", [], [SECOND], too_early) == [
        f"nightly@{SECOND}: started at 2026-11-27T11:00:00Z, before {FIRST} settled "
        "(succeeded, finished 2026-11-27T12:30:00Z)"
    ]
