"""Issue 11, findings 3 and 4, through every way a tick arrives: the scheduler's delivery to the
real handler, `clockless invoke` (local invoke), `clockless run-now` and `clockless backfill`, on
the embedded DynamoDB. A tick from the future, or one outside its fields' bounds, is refused
naming the field before anything is claimed or written. Each test failed on main."""

from __future__ import annotations

import importlib
import json
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from typer.testing import CliRunner

from clockless import MalformedTickError, format_scheduled_time
from clockless_tools.cli.app import app
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.seed import demo_module
from clockless_tools.template.model import Template
from tests.conftest import load_event
from tests.integration.conftest import scan_all
from tests.jobs import HOUR, job_where, project_template

# An hourly job of the template, seeded with its own demo data (its demo.py) so that a tick that ran
# would change its tables.
_JOB = job_where(period=HOUR)
JOB = _JOB.name
FUNCTION = _JOB.function_id
TICK_SAMPLE = _JOB.tick_sample
NOW = datetime(2026, 11, 29, 9, 20, 17, tzinfo=UTC)
BOOKKEEPING = ("IdempotencyTable", "LedgerTable")


def _seed_work_due_by(tables: Any, tick: datetime) -> dict[str, Any]:
    """The job's demo data for the hours up to `tick` (work a tick at `tick` would apply), seeded as
    `make run` seeds it, on the embedded server; what its tables then hold."""
    template = project_template()
    runtime = LocalLambdaRuntime(template, os.environ["AWS_ENDPOINT_URL_DYNAMODB"])
    module = demo_module(template, FUNCTION)
    assert module is not None, f"{JOB} has no demo.py to seed its work with"
    with runtime.function_environment(FUNCTION):
        importlib.import_module(module).seed(
            environ=runtime.environment(FUNCTION),
            tenants=1,
            rng=random.Random(JOB),
            start=tick - timedelta(hours=3),
            end=tick,
        )
    seeded = _job_tables(tables)
    assert any(seeded.values()), f"{JOB}'s demo seed wrote nothing"
    return seeded


def _job_tables(tables: Any) -> dict[str, Any]:
    return {table: scan_all(tables, table) for table in _JOB.tables}


def _nothing_written(tables: Any, seeded: dict[str, Any]) -> None:
    for table in BOOKKEEPING:
        assert scan_all(tables, table) == [], f"{table} was written"
    assert _job_tables(tables) == seeded


def _current_minute() -> datetime:
    return datetime.now(UTC).replace(second=0, microsecond=0)


# ---------------------------------------------------------------------------------------------- finding 3
def test_a_scheduled_delivery_from_the_future_claims_nothing_and_deletes_nothing(
    tables: Any, runtime: LocalLambdaRuntime
) -> None:
    # Given sessions that a tick three hours from now would find past their grace
    future = (NOW + timedelta(hours=3)).replace(minute=0, second=0)
    seeded = _seed_work_due_by(tables, future)
    event = load_event(TICK_SAMPLE) | {"scheduled_time": format_scheduled_time(future)}

    # When the function receives that tick now
    with (
        time_machine.travel(NOW, tick=False),
        count_requests() as requests,
        pytest.raises(MalformedTickError) as raised,
    ):
        runtime.invoke(FUNCTION, event)

    # Then it is malformed, naming the field, before a single request: nothing claimed, recorded or deleted
    assert raised.value.field == "scheduled_time"
    assert requests.total == 0
    _nothing_written(tables, seeded)


def test_a_local_invoke_of_a_future_tick_fails_naming_the_field(
    tables: Any, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    future = _current_minute() + timedelta(hours=2)
    seeded = _seed_work_due_by(tables, future)
    event_file = tmp_path / "future.json"
    event_file.write_text(json.dumps(load_event(TICK_SAMPLE) | {"scheduled_time": format_scheduled_time(future)}))

    result = CliRunner().invoke(app, ["invoke", FUNCTION, "--event", str(event_file), "--endpoint", dynamodb_endpoint])

    assert result.exit_code == 1, result.output
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["errorType"] == "MalformedTickError"
    assert "'scheduled_time'" in answer["errorMessage"]
    _nothing_written(tables, seeded)


def test_run_now_at_a_future_time_is_refused_in_one_line(tables: Any, dynamodb_endpoint: str) -> None:
    seeded = _seed_work_due_by(tables, datetime(2030, 1, 1, tzinfo=UTC))

    result = CliRunner().invoke(app, ["run-now", JOB, "--at", "2030-01-01T00:00:00Z", "--endpoint", dynamodb_endpoint])

    assert result.exit_code == 2
    # One error line; besides it only where the function's logs went (run-now's log file).
    [line] = [text for text in result.stderr.strip().splitlines() if not text.startswith("function logs and metrics: ")]
    assert "--at 2030-01-01T00:00:00Z is" in line
    assert "in the future" in line
    _nothing_written(tables, seeded)


def test_backfill_never_lists_or_runs_a_tick_after_now(tables: Any, template: Template, dynamodb_endpoint: str) -> None:
    # Given a range from three hours ago to three hours ahead, with the past ticks all missing
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start, end = hour - timedelta(hours=3), hour + timedelta(hours=4)
    command = ["backfill", JOB, "--from", format_scheduled_time(start), "--to", format_scheduled_time(end)]

    # When it is listed, then run
    listed = CliRunner().invoke(app, [*command, "--dry-run", "--json", "--endpoint", dynamodb_endpoint])
    ran = CliRunner().invoke(app, [*command, "--json", "--endpoint", dynamodb_endpoint])

    # Then only the ticks up to now are missing and replayed; the later ones are not yet due
    assert listed.exit_code == 0, listed.output
    assert ran.exit_code == 0, ran.output
    due = [format_scheduled_time(start + timedelta(hours=n)) for n in range(4)]
    assert json.loads(listed.stdout)["missing"] == due
    assert json.loads(listed.stdout)["not_yet_due"] == 3
    assert sorted(json.loads(ran.stdout)["outcomes"]) == due
    ticks = [item for item in scan_all(tables, "LedgerTable") if not item["job"]["S"].endswith("#work")]
    assert sorted(item["scheduled_time"]["S"] for item in ticks) == due
    told = CliRunner().invoke(app, [*command, "--dry-run", "--endpoint", dynamodb_endpoint])
    assert "3 tick(s) of the range are after now: not due yet" in told.stdout


# ---------------------------------------------------------------------------------------------- finding 4
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"scheduled_time": "0002-01-01T01:00:00Z"}, "scheduled_time"),
        ({"scheduled_time": "0001-01-01T00:00:00+01:00"}, "scheduled_time"),
        ({"scheduled_time": "9999-12-31T23:59:00-01:00"}, "scheduled_time"),
        ({"scheduled_time": "2026-11-29T09:00:00+00:00:30"}, "scheduled_time"),
        ({"attempt": float("inf")}, "attempt"),
        ({"execution_id": "e" * 450_000}, "execution_id"),
    ],
    ids=["year-2", "year-1-offset", "year-9999-offset", "off-minute-offset", "attempt-1e400", "450-KB-execution-id"],
)
def test_a_tick_outside_its_bounds_is_malformed_and_writes_nothing(
    tables: Any, runtime: LocalLambdaRuntime, change: dict[str, Any], field: str
) -> None:
    # Refused before any request (counted below): no work needs seeding to show nothing was written.
    seeded = _job_tables(tables)
    event = load_event(TICK_SAMPLE) | change

    with (
        time_machine.travel(NOW, tick=False),
        count_requests() as requests,
        pytest.raises(MalformedTickError) as raised,
    ):
        runtime.invoke(FUNCTION, event)

    assert raised.value.field == field
    assert len(str(raised.value)) < 400
    assert requests.total == 0
    _nothing_written(tables, seeded)


def test_a_year_2_tick_leaves_the_jobs_later_ticks_working(tables: Any, runtime: LocalLambdaRuntime) -> None:
    # Given a year-2 tick delivered (on main it ran, and its ledger key was written unpadded)
    tick = load_event(TICK_SAMPLE)
    with time_machine.travel(NOW, tick=False):
        with pytest.raises(MalformedTickError):
            runtime.invoke(FUNCTION, tick | {"scheduled_time": "0002-01-01T01:00:00Z"})

        # When the job's next real tick arrives (it reads its last success from the ledger)
        result = runtime.invoke(FUNCTION, tick)

    # Then it runs, and the ledger holds only well-spelled times
    assert result["outcome"] == "executed"
    assert [item["scheduled_time"]["S"] for item in scan_all(tables, "LedgerTable")] == [tick["scheduled_time"]]
