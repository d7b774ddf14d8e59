"""simulate/request.py: what a simulation is asked for, bad input refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clockless_tools.simulate.request import SimulationInputError, SimulationRequest, parse_drop
from clockless_tools.template.model import Template
from tests.jobs import DAY, HOUR, job_where

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
START, END = datetime(2026, 11, 27, tzinfo=UTC), datetime(2026, 11, 29, tzinfo=UTC)


def test_drops_must_name_a_tick_of_a_scheduled_job(template: Template) -> None:
    assert parse_drop(f"{HOURLY_JOB.name}@2026-11-28T03:00:00Z") == (
        HOURLY_JOB.name,
        datetime(2026, 11, 28, 3, tzinfo=UTC),
    )
    with pytest.raises(SimulationInputError, match="must be JOB@UTC_TIME"):
        parse_drop("@2026-11-28T03:00:00Z")
    with pytest.raises(SimulationInputError, match=f"not a tick of {HOURLY_JOB.name}"):
        SimulationRequest(
            template, START, END, drops=((HOURLY_JOB.name, datetime(2026, 11, 28, 3, 30, tzinfo=UTC)),)
        ).validate()


@pytest.mark.parametrize(
    ("capacity", "scale", "endpoint", "refusal"),
    [
        ("tepid", 1.0, None, "--capacity 'tepid': choose one of cold, warm"),
        ("cold", 0.0, None, "--scale 0: must be positive"),
        (None, 50.0, None, "--scale 50 needs --capacity"),
        ("warm", 1.0, "http://127.0.0.1:8765", "drop --endpoint or --capacity"),
    ],
)
def test_capacity_options_are_checked_before_anything_runs(
    template: Template, capacity: str | None, scale: float, endpoint: str | None, refusal: str
) -> None:
    request = SimulationRequest(template, START, END, capacity=capacity, scale=scale, endpoint=endpoint)
    with pytest.raises(SimulationInputError, match=refusal):
        request.validate()
    assert SimulationRequest(template, START, END, capacity="cold", scale=200).validate()
