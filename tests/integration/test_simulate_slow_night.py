"""`clockless simulate --slow-night`: the fanned-out jobs' workers lag, ticks overlap, and each
overlap policy is judged (clockless_tools.simulate.slow_night). Every job the template declares,
under the policy the run sets for all of them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

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
