"""The night model against the capacity-faithful emulator (bench/capacity_check.py), at the
bench's sizes for it: every scenario (cold and warm, spread and one tenant, each job) ends succeeded with
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
    wrong = []
    for job in template.jobs:
        for start, tenancy in SCENARIOS:
            row = details[job][f"{start}.{tenancy}"]
            observed = row["observed"]
            clean = observed["status"] == "succeeded" and observed["applied"] == row["items"]
            if not clean or observed["dead_lettered"] or observed["failed_runs"]:
                wrong.append(f"{job} {start} {tenancy}: not a clean tick: {row}")
            if not sum(observed["throttled"].values()):
                wrong.append(f"{job} {start} {tenancy}: nothing was throttled, the limits did not bind")
            if abs(row["ratio"] - 1) > TOLERANCE:
                wrong.append(f"{job} {start} {tenancy}: observed/predicted {row['ratio']}: {row}")
    assert wrong == []
