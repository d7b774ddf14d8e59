"""simulate/request.py: what a simulation is asked for, bad input refused."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clockless_tools.simulate.request import (
    DEFAULT_KEYS_PER_PARTITION,
    SAMPLED_CONSECUTIVE,
    SimulationInputError,
    SimulationRequest,
    parse_drop,
    sampled_ticks,
)
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT
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


def _every(minutes: int, start: datetime, end: datetime) -> list[datetime]:
    return [start + timedelta(minutes=minutes * n) for n in range(int((end - start) / timedelta(minutes=minutes)))]


@pytest.mark.parametrize(("minutes", "kept"), [(2, 29), (5, 29), (10, 29), (15, 27), (30, 25), (60, 24)])
def test_a_sampled_day_keeps_each_hours_first_tick_and_a_run_from_the_last_hour(minutes: int, kept: int) -> None:
    start, end = START, START + timedelta(days=1)
    times = _every(minutes, start, end)

    sampled = sampled_ticks(times, start=start, end=end)

    # At most 24 + 5 ticks a job, whatever its schedule: every hour's first, and consecutive ticks from 23:00
    assert len(sampled) == kept <= 24 + SAMPLED_CONSECUTIVE - 1
    assert {t.replace(minute=0) for t in sampled} == {start + HOUR * h for h in range(24)}
    last = [t for t in times if t >= end - HOUR][:SAMPLED_CONSECUTIVE]
    assert set(last) <= set(sampled)


def test_a_sampled_run_keeps_the_ticks_asked_to_drop_and_a_full_one_every_tick(tmp_path: Path) -> None:
    day = START + timedelta(days=1)
    # Given a template whose hourly job ticks every 10 minutes
    text = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
    hourly = f"    {HOURLY_JOB.stem}:\n"
    block = text.index(hourly)
    edited = text[:block] + text[block:].replace("Schedule: cron(0 * * * ? *)", "Schedule: cron(0/10 * * * ? *)", 1)
    (tmp_path / "template.yaml").write_text(edited, encoding="utf-8")
    ten_minutes = Template.load(tmp_path / "template.yaml")
    dropped = (HOURLY_JOB.name, START + timedelta(hours=5, minutes=40))

    sampled = SimulationRequest(ten_minutes, START, day, drops=(dropped,), sample=True)
    every = SimulationRequest(ten_minutes, START, day, drops=(dropped,))

    assert len(sampled.validate()[HOURLY_JOB.name]) == 29 + 1
    assert dropped[1] in sampled.validate()[HOURLY_JOB.name]
    assert len(every.validate()[HOURLY_JOB.name]) == sampled.scheduled()[HOURLY_JOB.name] == 144
    # And a job ticking hourly or less often is never sampled
    assert sampled.validate()[DAILY_JOB.name] == every.validate()[DAILY_JOB.name]


def test_the_replays_keys_per_partition_are_theirs_only_on_their_own_tables(template: Template) -> None:
    # the default, on the simulation's own tables: one key per partition (docs/simulation.md#index-keys)
    assert SimulationRequest(template, START, END).replayed_keys_per_partition == DEFAULT_KEYS_PER_PARTITION
    assert SimulationRequest(template, START, END, keys_per_partition=2).replayed_keys_per_partition == 2
    # on a running DynamoDB, seeded at the jobs' own counts: those, and the option refused
    on_server = SimulationRequest(template, START, END, endpoint="http://127.0.0.1:8765")
    assert on_server.replayed_keys_per_partition is None
    with pytest.raises(SimulationInputError, match="drop --endpoint or --keys-per-partition"):
        replace(on_server, keys_per_partition=2).validate()
    with pytest.raises(SimulationInputError, match="--keys-per-partition 0: a partition reads one key or more"):
        SimulationRequest(template, START, END, keys_per_partition=0).validate()
