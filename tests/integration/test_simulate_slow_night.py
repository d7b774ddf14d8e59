"""`clockless simulate --slow-night`: the fanned-out jobs' workers lag, ticks overlap, and each
overlap policy is judged (clockless_tools.simulate.slow_night). Every job the template declares,
under the policy the run sets for all of them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from typer.testing import CliRunner

from clockless.tick import format_scheduled_time, parse_scheduled_time
from clockless_tools.cli.app import app
from clockless_tools.local.event_sources import worker_functions
from clockless_tools.template.model import Template
from tests.integration.test_simulate import FROM, TICKS, TO, jobs, simulate

TEMPLATE = Template.load()
# Jobs whose workers lag (they fan out) and whose ticks come often enough to overlap in the range.
OVERLAPPING = [
    job
    for job, times in TICKS.items()
    if worker_functions(TEMPLATE, TEMPLATE.jobs[job].function_id) and len(times) >= 3
]
FANNED_OUT = [job for job in TICKS if TICKS[job] and worker_functions(TEMPLATE, TEMPLATE.jobs[job].function_id)]


@pytest.mark.slow  # a whole simulation per policy: CI runs them
@pytest.mark.parametrize("policy", ["skip", "buffer"])
def test_a_slow_night_holds_ticks_back_as_the_policy_says_and_each_still_takes_effect_once(policy: str) -> None:
    assert OVERLAPPING, "no job of the template fans out with three ticks in the range"

    code, report = simulate("--from", FROM, "--to", TO, "--tenants", "1", "--slow-night", "--overlap", policy)

    assert code == 0, report["proved"]
    for job in OVERLAPPING:
        found = jobs(report)[job]
        assert found["overlap"] == policy
        assert found["exactly_once"]
        assert found["ticks_missed"] == []
        assert found["overlap_problems"] == []
        assert found["workers"]["dead_lettered"] == 0
        if policy == "skip":
            assert found["ticks_skipped"]
            assert not found["ticks_buffered"]
        else:
            # every buffered tick ran, after the one it waited for (the judge read the ledger)
            assert found["ticks_buffered"]
            assert found["ticks_started_from_buffer"] == found["ticks_buffered"]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("--slow-night", "--overlap", "skip-it"), "--overlap 'skip-it': choose one of run-both, skip, buffer"),
        (("--overlap", "skip"), "--overlap needs --slow-night"),
    ],
)
def test_a_bad_overlap_option_is_one_line_and_exit_code_2(args: tuple[str, ...], problem: str) -> None:
    result = CliRunner().invoke(app, ["simulate", "--from", FROM, "--to", TO, *args])

    assert result.exit_code == 2
    assert problem in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def _loneliest_tick(job: str) -> str:
    """The job's first tick in the range that no other job shares, else its first."""
    others = {t for other, times in TICKS.items() if other != job for t in times}
    alone = [t for t in TICKS[job] if t not in others]
    return format_scheduled_time((alone or TICKS[job])[0])


@pytest.mark.slow  # a simulation per job: CI runs them
@pytest.mark.parametrize("job", FANNED_OUT)
def test_a_last_tick_whose_workers_crash_is_drained_to_the_end_with_no_round_after_it(job: str) -> None:
    # GIVEN one tick and nothing after it, whose lagging workers crash on some messages (seed 1)
    at = _loneliest_tick(job)
    until = format_scheduled_time(parse_scheduled_time(at) + timedelta(minutes=1))

    # WHEN the run ends with no later round: only the messages' return wakes the workers
    code, report = simulate("--from", at, "--to", until, "--seed", "1", "--slow-night")

    # THEN every crashed message came back and was handled: the tick settled, its effect once
    found = jobs(report)[job]
    assert found["workers"]["faults"]["crash"] > 0, "seed 1 no longer crashes a worker of this tick"
    assert found["workers"]["redelivered"] >= found["workers"]["faults"]["crash"]
    assert found["workers"]["ticks_complete"] == 1
    assert found["exactly_once"], found["workers"]["ledger_differences"]
    assert code == 0, report["proved"]
