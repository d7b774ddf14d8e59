"""`clockless events`: the samples in events/ are what the template's Input gives, and drift is named."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clockless import Tick
from clockless_tools.cli.app import app
from clockless_tools.template.events import check_events, sample_events, schedule_arn, write_events
from clockless_tools.template.model import Template
from tests.conftest import EVENTS, PROJECT_ROOT
from tests.jobs import DAY, HOUR, job_where

# The jobs these tests run, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)


def test_the_events_folder_matches_the_template(template: Template) -> None:
    assert check_events(template, EVENTS) == []


def test_the_check_command_passes_on_the_repository() -> None:
    result = CliRunner().invoke(app, ["events", "--check"])

    assert result.exit_code == 0, result.stderr


@pytest.fixture
def events_copy(tmp_path: Path) -> Path:
    shutil.copytree(EVENTS, tmp_path / "events")
    return tmp_path / "events"


def test_drift_names_the_file_and_the_key(template: Template, events_copy: Path) -> None:
    tick = events_copy / HOURLY_JOB.package / "tick.json"
    event = json.loads(tick.read_text(encoding="utf-8"))
    event["scheduled_time"] = "2026-11-29T09:30:00Z"
    del event["execution_id"]
    event["note"] = "hand-edited"
    tick.write_text(json.dumps(event, indent=2) + "\n", encoding="utf-8")
    (events_copy / DAILY_JOB.package / "retry.json").unlink()

    problems = check_events(template, events_copy)

    shown = str(tick)
    assert (
        f"{shown}: key 'scheduled_time' is '2026-11-29T09:30:00Z'; the template gives '2026-11-29T09:00:00Z'"
        in problems
    )
    assert any(p.startswith(f"{shown}: key 'execution_id' is missing") for p in problems)
    assert f"{shown}: key 'note' should not be there (the generated sample has none)" in problems
    assert f"{events_copy / DAILY_JOB.package / 'retry.json'}: missing (write it with `clockless events`)" in problems


def test_the_check_command_exits_1_on_drift_and_writing_repairs_it(template: Template, events_copy: Path) -> None:
    (events_copy / HOURLY_JOB.package / "malformed.json").write_text("{", encoding="utf-8")

    drifted = CliRunner().invoke(app, ["events", "--check", "--dir", str(events_copy)])
    written = CliRunner().invoke(app, ["events", "--dir", str(events_copy)])

    assert drifted.exit_code == 1
    assert "malformed.json: not valid JSON" in drifted.stderr
    assert written.exit_code == 0
    assert check_events(template, events_copy) == []


def test_samples_of_a_function_no_longer_in_the_template_are_drift(template: Template, events_copy: Path) -> None:
    (events_copy / "retired_job").mkdir()
    (events_copy / "retired_job" / "tick.json").write_text("{}\n", encoding="utf-8")

    assert check_events(template, events_copy) == [
        f"{events_copy / 'retired_job' / 'tick.json'}: no function in the template has this folder"
    ]


def test_writing_twice_changes_nothing_the_second_time(template: Template, tmp_path: Path) -> None:
    first = write_events(template, tmp_path)
    second = write_events(template, tmp_path)

    assert len(first) == 3 * len(template.jobs)
    assert second == []


def test_samples_are_real_ticks_a_retry_and_a_payload_without_its_time(template: Template) -> None:
    for job, schedule in template.jobs.items():
        samples = sample_events(schedule)

        tick = Tick.from_event(samples["tick"], expected_job=job)
        retry = Tick.from_event(samples["retry"], expected_job=job)
        # A tick the schedule really fires (at whatever minute), carrying the ARN of the schedule SAM generates.
        assert tick.scheduled_time in schedule.spec(template).ticks_between(
            tick.scheduled_time, tick.scheduled_time + timedelta(minutes=1)
        )
        assert tick.schedule_arn == schedule_arn(schedule)
        assert (retry.identity, retry.attempt) == (tick.identity, 2)
        assert retry.execution_id != tick.execution_id
        assert "scheduled_time" not in samples["malformed"]


def test_schedules_sharing_a_folder_get_a_set_of_samples_each(tmp_path: Path) -> None:
    fixture = Template.load(PROJECT_ROOT / "tests" / "fixtures" / "broken_jobs" / "template.yaml")

    written = write_events(fixture, tmp_path)

    assert sorted(path.name for path in written) == sorted(
        f"{function}.{kind}.json"
        for function in ("CounterFunction.Hourly", "FailingFunction.EverySixHours")
        for kind in ("tick", "retry", "malformed")
    )
