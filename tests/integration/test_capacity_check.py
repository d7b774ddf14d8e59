"""The night model against the capacity-faithful emulator (bench/capacity_check.py), at the bench's
QUICK sizes: every scenario (cold and warm, spread and one tenant, each job) ends succeeded with
every item applied, nothing in the work DLQ, no failed run, within 25 % of the model. Minutes of
CPU: `pytest -m slow`."""

from __future__ import annotations

import pytest

from clockless_tools.bench.capacity_check import SCENARIOS, TOLERANCE
from clockless_tools.bench.results import QUICK
from clockless_tools.bench.run import run_bench
from clockless_tools.template.model import Template

pytestmark = pytest.mark.slow


def test_the_model_predicts_the_emulated_nights_within_a_quarter(template: Template) -> None:
    results = run_bench(template, sizes=QUICK, only=("capacity_check",))

    figures = [figure for figure in results.figures if figure.key.startswith("capacity_check.")]
    details = results.details["capacity_check"]
    assert len(figures) == len(SCENARIOS) * len(template.jobs)
    for job in template.jobs:
        for start, tenancy in SCENARIOS:
            row = details[job][f"{start}.{tenancy}"]
            assert row["observed"]["status"] == "succeeded", row
            assert row["observed"]["applied"] == row["items"], row
            assert row["observed"]["dead_lettered"] == 0, row
            assert row["observed"]["failed_runs"] == 0, row
            assert sum(row["observed"]["throttled"].values()) > 0, f"{job} {start} {tenancy}: nothing was throttled"
            assert abs(row["ratio"] - 1) <= TOLERANCE, row
