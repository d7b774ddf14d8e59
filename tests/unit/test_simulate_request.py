"""simulate/request.py: what a simulation is asked for, bad input refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clockless_tools.simulate.request import SimulationInputError, SimulationRequest, parse_drop
from clockless_tools.template.model import Template

START, END = datetime(2026, 11, 27, tzinfo=UTC), datetime(2026, 11, 29, tzinfo=UTC)


def test_drops_must_name_a_tick_of_a_scheduled_job(template: Template) -> None:
    assert parse_drop("session-cleanup@2026-11-28T03:00:00Z") == (
        "session-cleanup",
        datetime(2026, 11, 28, 3, tzinfo=UTC),
    )
    with pytest.raises(SimulationInputError, match="must be JOB@UTC_TIME"):
        parse_drop("@2026-11-28T03:00:00Z")
    with pytest.raises(SimulationInputError, match="not a tick of session-cleanup"):
        SimulationRequest(
            template, START, END, drops=(("session-cleanup", datetime(2026, 11, 28, 3, 30, tzinfo=UTC)),)
        ).validate()
