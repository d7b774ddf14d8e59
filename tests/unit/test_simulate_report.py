"""simulate/report.py: how the template tells bookkeeping tables from the jobs' own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clockless_tools.simulate.report import JobReport, SimulationReport
from clockless_tools.simulate.snapshot import ItemDifference, TableEffects
from clockless_tools.simulate.tables import bookkeeping_tables, job_tables
from clockless_tools.template.model import Template
from tests.jobs import DAY, HOUR, job_where

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)


def test_bookkeeping_tables_are_told_by_their_metadata(template: Template) -> None:
    assert bookkeeping_tables(template) == {"IdempotencyTable", "LedgerTable"}
    assert job_tables(template, DAILY_JOB.function_id) == list(DAILY_JOB.tables)
    assert job_tables(template, HOURLY_JOB.function_id) == list(HOURLY_JOB.tables)


def _report(*jobs: JobReport) -> SimulationReport:
    start = datetime(2026, 11, 27, tzinfo=UTC)
    return SimulationReport(start, start + timedelta(hours=2), 7, None, None, list(jobs), ["T"], [])


def _job(name: str, *, ticks: int, effects: int, has_demo: bool = True) -> JobReport:
    job = JobReport(name, "F", "cron(0 * * * ? *)", ["T"], ticks_expected=ticks, has_demo=has_demo)
    job.effects = {"T": TableEffects(created=effects)}
    job.reference_effects = {"T": TableEffects(created=effects)}
    job.failures_injected, job.responses_lost = 2, 1
    return job


def test_the_run_says_in_one_sentence_what_it_proved_counted_from_the_jobs() -> None:
    report = _report(_job("a", ticks=2, effects=5), _job("b", ticks=1, effects=7), _job("quiet", ticks=0, effects=0))

    assert report.ok
    assert (
        report.proved()
        == "3 ticks of 2 jobs took effect exactly once: 12 items applied, 0 twice, 0 lost, under 6 injected faults"
    )


def test_a_job_with_ticks_and_no_effect_gets_no_verdict_and_fails_the_run() -> None:
    # Given a job whose ticks were delivered but whose tables nothing seeded (no demo.py)
    idle = _job("subscription-expiry", ticks=2, effects=0, has_demo=False)

    report = _report(_job("a", ticks=2, effects=5), idle)

    # Then it is no proof of anything: the run fails, saying so
    assert idle.exactly_once
    assert idle.no_work
    assert not report.ok
    assert idle.no_work_reason == (
        "no work seeded for subscription-expiry: 2 ticks delivered, no effect (its package has no demo.py: no data)"
    )
    assert "NOT proved (no work seeded for subscription-expiry)" in report.proved()


def test_a_job_without_tables_of_its_own_is_judged_by_its_ticks_alone() -> None:
    # Given a job whose writes are the kit's ledger only (tick-reaper settles other jobs' ticks)
    reaper = JobReport("tick-reaper", "F", "cron(30 * * * ? *)", [], ticks_expected=2, has_demo=False)

    report = _report(_job("a", ticks=2, effects=5), reaper)

    # Then it has no table verdict to withhold: the run stands on its ticks, each once
    assert not reaper.no_work
    assert report.ok
    reaper.ticks_missed = ["tick-reaper@2026-11-27T00:30:00Z"]
    assert not _report(_job("a", ticks=2, effects=5), reaper).ok


def test_items_done_twice_or_lost_are_counted_in_the_sentence() -> None:
    job = _job("a", ticks=2, effects=5)
    job.differences = [
        ItemDifference("T", {"k": 1}, "changed"),
        ItemDifference("T", {"k": 2}, "extra"),
        ItemDifference("T", {"k": 3}, "missing", lost=True),
        # a deletion the simulation left undone: the item is there as seeded, so lost, not twice
        ItemDifference("T", {"k": 4}, "extra", lost=True),
    ]

    report = _report(job)

    assert not report.ok
    assert report.proved().endswith(
        "NOT proved (effects differ: a): 5 items applied, 2 twice, 2 lost, under 3 injected faults"
    )


def test_no_work_says_whether_the_data_or_the_logic_was_empty() -> None:
    empty = _job("a", ticks=2, effects=0)
    idle = _job("b", ticks=2, effects=0)
    idle.seeded_items = 40

    assert "(the data is empty: its demo.py wrote no item to T)" in empty.no_work_reason
    assert "(the logic did nothing: its demo.py seeded 40 items in T and no tick changed one" in idle.no_work_reason


def test_counts_moved_to_other_ticks_are_a_proof_with_a_note_and_effects_that_differ_still_fail() -> None:
    # Given a fanned-out job whose tables match the reference item by item and whose ledger counters
    # differ per tick with the same totals (an item due to two ticks, applied by the other one)
    moved = _job("sweep", ticks=4, effects=8)
    moved.workers.ledger_differences = ["sweep@2026-11-27T00:15:00Z: applied 3 vs 2 (simulation vs reference)"]
    moved.workers.counters_only = True
    # And one whose ledger differs otherwise
    wrong = _job("other", ticks=2, effects=5)
    wrong.workers.ledger_differences = ["other@2026-11-27T01:00:00Z: status 'failed' vs 'succeeded'"]

    alone = _report(moved)
    both = _report(moved, wrong)

    # Then the moved counts alone are proved, exactly once, with a note naming the job and what to change
    assert (moved.counts_elsewhere, moved.exactly_once, moved.proved) == (True, False, True)
    assert alone.ok
    assert alone.proved() == (
        "4 ticks of 1 job took effect exactly once: 8 items applied, 0 twice, 0 lost, under 3 injected faults"
    )
    (note,) = alone.notes()
    assert note.startswith("note: sweep: effects identical item by item, counts attributed to other ticks")
    assert "make each tick cover only its own window (docs/simulation.md#what-the-verdict-means)" in note
    assert alone.as_dict()["jobs"][0]["counts_elsewhere"] is True
    assert alone.as_dict()["notes"] == [note]
    # And a ledger that differs beyond its counters still fails, naming only that job
    assert not wrong.counts_elsewhere
    assert not both.ok
    assert "NOT proved (effects differ: other): " in both.proved()
    assert both.notes() == [note]


def test_counts_moved_beside_an_item_changed_twice_are_not_proved() -> None:
    # Given counters that moved with the same totals, but an item changed twice as well
    changed = _job("sweep", ticks=4, effects=8)
    changed.workers.counters_only = True
    changed.workers.ledger_differences = ["sweep@2026-11-27T00:15:00Z: applied 3 vs 2 (simulation vs reference)"]
    changed.differences = [ItemDifference("T", {"k": 1}, "changed")]

    report = _report(changed)

    # Then it is not a proof, and there is no note to soften it
    assert not changed.proved
    assert not report.ok
    assert "NOT proved (effects differ: sweep)" in report.proved()
    assert report.notes() == []


def test_a_sampled_job_is_named_in_the_sentence_and_a_note_with_what_it_left_out() -> None:
    # Given a 10-minute job of which a sampled day delivered 29 of its 144 ticks, beside an hourly one
    sampled = _job("stale-cart-purge", ticks=29, effects=5)
    sampled.ticks_scheduled = 144
    hourly = _job("session-cleanup", ticks=24, effects=3)

    report = _report(sampled, hourly)

    # Then the verdict says which ticks it rests on, and a note how to deliver every one
    assert report.proved().startswith(
        "53 ticks of 2 jobs (sampled: stale-cart-purge 29 of 144) took effect exactly once"
    )
    (note,) = report.notes()
    assert note.startswith("note: stale-cart-purge: 29 of its 144 ticks delivered (sampled")
    assert "`make run FULL=1`" in note
    assert (sampled.as_dict()["ticks_scheduled"], hourly.as_dict()["ticks_scheduled"]) == (144, 24)
