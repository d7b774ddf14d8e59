"""The night model against the capacity-faithful emulator (bench/capacity_check.py), at the
bench's sizes for it: every scenario (cold and warm, spread and one tenant, each job) ends succeeded with
every item applied, nothing in the work DLQ, no failed run, within 25 % of the model. Minutes of
CPU: `pytest -m slow`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clockless_tools.bench.capacity_check import SCENARIOS, TOLERANCE
from clockless_tools.bench.requests import fanned_out_jobs
from clockless_tools.template.model import Template

# Its observed seconds are wall time: `make test-slow` runs it after the other slow tests, by itself.
pytestmark = [pytest.mark.slow, pytest.mark.alone]


def test_the_model_predicts_the_emulated_nights_within_a_quarter(template: Template, tmp_path: Path) -> None:
    # In a process of its own, as `make bench-model` runs it: the bench's servers close when it
    # ends, and the jobs' clients it bound to them must not outlive them in this test worker.
    output = tmp_path / "results.json"
    command = [sys.executable, "-m", "clockless_tools.cli", "bench", "run", "--quick", "--only", "capacity_check"]
    done = subprocess.run([*command, "--output", str(output)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads(output.read_text(encoding="utf-8"))
    figures = [key for key in results["figures"] if key.startswith("capacity_check.")]
    details = results["details"]["capacity_check"]
    # The capacity check is a fanned-out job's question: the reaper and plain jobs write no shards.
    jobs = sorted({job for job, _ in fanned_out_jobs(template)})
    assert sorted(details) == sorted([*jobs, "tolerance"])
    assert len(figures) == len(SCENARIOS) * len(jobs)
    wrong = []
    for job in jobs:
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
