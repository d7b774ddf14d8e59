"""Missed ticks are found, backfilled exactly once, and a manual tick has a scheduled tick's semantics."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless import Trigger
from clockless.fanout import FanOut
from clockless_tools.cli.app import app
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.dynamodb import (
    create_tables,
    delete_tables,
    dynamodb_client,
    local_environment,
    patched_environ,
)
from clockless_tools.local.queues import create_queues, delete_queues
from clockless_tools.operations.backfill import BackfillPolicy, backfill
from clockless_tools.operations.run_now import run_now
from clockless_tools.operations.status import job_status
from clockless_tools.operations.targets import LocalTarget, OperationError, tick_event
from clockless_tools.simulate.snapshot import Snapshot, dump_tables, load_tables
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template
from session_cleanup.logic import SessionRef
from session_cleanup.repository import DynamoSessionStore, SessionPartitionWork
from tests.integration.conftest import scan_all

JOB = "session-cleanup"
DAY = datetime(2026, 11, 29, tzinfo=UTC)
# The night: the hourly ticks from 02:00 to 06:00, 03:00 and 05:00 never delivered. Two gaps apart
# (a policy may replay only the newest), each between delivered ticks; five ticks keep it quick.
NIGHT = [DAY + timedelta(hours=hour) for hour in range(2, 7)]
DROPPED = [DAY + timedelta(hours=3), DAY + timedelta(hours=5)]
FIRST, END = NIGHT[0], NIGHT[-1] + timedelta(hours=1)
NOW = NIGHT[-1] + timedelta(minutes=30)
WINDOW = NOW - FIRST


@pytest.fixture
def target(tables: Any, local_queues: Any, template: Template, dynamodb_endpoint: str) -> LocalTarget:
    return LocalTarget(template, dynamodb_endpoint)


@pytest.fixture(scope="module")
def gapped_night(template: Template, dynamodb_endpoint: str) -> Snapshot:
    """The NIGHT's ticks with DROPPED never delivered, replayed once for the module."""
    with patched_environ(local_environment(dynamodb_endpoint)):
        create_tables(template, dynamodb_endpoint)
        create_queues(template, dynamodb_endpoint)
        try:
            _seed_sessions()
            _run_schedule(LocalTarget(template, dynamodb_endpoint), dropping=DROPPED)
            return dump_tables(dynamodb_client(dynamodb_endpoint), map(LocalNames().table_name, template.tables))
        finally:
            delete_tables(template, dynamodb_endpoint)
            delete_queues(template, dynamodb_endpoint)


def _seed_sessions() -> None:
    DynamoSessionStore("SessionsTable").start_sessions(
        [SessionRef("tenant-a", f"s-{hour:02d}", DAY + timedelta(hours=hour - 3)) for hour in range(12)]
    )


def _run_schedule(target: LocalTarget, *, dropping: list[datetime]) -> None:
    for tick in NIGHT:
        if tick not in dropping:
            target.invoke(JOB, tick_event(target, JOB, tick, Trigger.SCHEDULE))


def _domain_state(tables: Any) -> list[dict[str, Any]]:
    return sorted(scan_all(tables, "SessionsTable"), key=lambda item: item["session_id"]["S"])


def _ledger(tables: Any) -> dict[str, dict[str, Any]]:
    return {item["scheduled_time"]["S"]: item for item in scan_all(tables, "LedgerTable") if item["job"]["S"] == JOB}


def test_status_lists_exactly_the_dropped_ticks(
    target: LocalTarget, template: Template, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)

    status = job_status(template, target, JOB, now=NOW, window=WINDOW)

    assert status.expected == len(NIGHT)
    assert status.missing == DROPPED
    assert status.last_success is not None
    assert status.last_success.scheduled_time == NIGHT[-1]
    assert status.next_ticks[0] == END


def test_backfill_fills_the_gap_once_and_a_second_backfill_changes_nothing(
    target: LocalTarget, template: Template, tables: Any, dynamodb_endpoint: str, gapped_night: Snapshot
) -> None:
    # Given a reference: the same schedule with no gap, on the same seed
    _seed_sessions()
    _run_schedule(target, dropping=[])
    reference = _domain_state(tables)
    delete_tables(template, dynamodb_endpoint)
    create_tables(template, dynamodb_endpoint)

    # And the schedule again, with two ticks never delivered
    load_tables(tables, gapped_night)

    # When the gap is backfilled
    first = backfill(template, target, JOB, start=FIRST, end=END, policy=BackfillPolicy.ALL)

    # Then each missing tick ran once, and the tables hold exactly the gap-free result
    assert first.outcomes == {"2026-11-29T03:00:00Z": "executed", "2026-11-29T05:00:00Z": "executed"}
    ledger = _ledger(tables)
    assert len(ledger) == len(NIGHT)
    assert all(entry["status"]["S"] == "succeeded" and entry["attempts"]["N"] == "1" for entry in ledger.values())
    assert {key for key, entry in ledger.items() if entry["trigger"]["S"] == "backfill"} == set(first.outcomes)
    assert _domain_state(tables) == reference

    # When it is run again, nothing is planned and no function is invoked
    with count_requests() as requests:
        second = backfill(template, target, JOB, start=FIRST, end=END, policy=BackfillPolicy.ALL)
    assert second.planned == []
    assert requests.of("PutItem") == 0
    assert requests.of("TransactWriteItems") == 0
    assert _domain_state(tables) == reference


def test_policy_latest_replays_only_the_newest_and_a_second_run_finds_nothing(
    target: LocalTarget, template: Template, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)

    latest = backfill(template, target, JOB, start=FIRST, end=END, policy=BackfillPolicy.LATEST)
    assert latest.outcomes == {"2026-11-29T05:00:00Z": "executed"}
    assert latest.superseded == {"2026-11-29T03:00:00Z": "skipped (superseded by the newest)"}
    entry = _ledger(tables)["2026-11-29T03:00:00Z"]
    assert entry["status"]["S"] == "skipped"
    assert "superseded by 2026-11-29T05:00:00Z" in entry["error"]["S"]

    with count_requests() as requests:
        again = backfill(template, target, JOB, start=FIRST, end=END, policy=BackfillPolicy.LATEST)
    assert (again.missing, again.outcomes, again.superseded) == ([], {}, {})
    assert requests.of("PutItem") == requests.of("TransactWriteItems") == 0
    assert job_status(template, target, JOB, now=NOW, window=WINDOW).missing == []


def test_policy_skip_records_without_running_and_its_dry_run_says_would_skip(
    target: LocalTarget, template: Template, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)
    before = _domain_state(tables)

    dry = backfill(template, target, JOB, start=FIRST, end=END, policy=BackfillPolicy.SKIP, dry_run=True)
    assert (dry.planned, dry.outcomes, dry.verb) == (DROPPED, {}, "would skip")

    skipped = backfill(template, target, JOB, start=FIRST, end=END, policy=BackfillPolicy.SKIP)
    assert skipped.outcomes == {"2026-11-29T03:00:00Z": "skipped", "2026-11-29T05:00:00Z": "skipped"}
    assert _ledger(tables)["2026-11-29T03:00:00Z"]["status"]["S"] == "skipped"
    assert _domain_state(tables) == before
    assert job_status(template, target, JOB, now=NOW, window=WINDOW).missing == []


def test_dry_run_lists_and_changes_nothing(
    target: LocalTarget, template: Template, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)
    before = _domain_state(tables), _ledger(tables)

    result = backfill(template, target, JOB, start=FIRST, end=END, policy=BackfillPolicy.ALL, dry_run=True)

    assert result.planned == DROPPED
    assert result.outcomes == {}
    assert (_domain_state(tables), _ledger(tables)) == before


def test_a_range_over_the_limit_is_refused_unless_forced(target: LocalTarget, template: Template) -> None:
    with pytest.raises(OperationError, match="refusing to backfill 1464 ticks"):
        backfill(template, target, JOB, start=DAY - timedelta(days=61), end=DAY, policy=BackfillPolicy.ALL)

    with pytest.raises(OperationError, match="unknown job 'nightly'"):
        backfill(template, target, "nightly", start=DAY, end=NOW, policy=BackfillPolicy.ALL)


def test_run_now_twice_has_one_effect(target: LocalTarget, template: Template, tables: Any) -> None:
    _seed_sessions()
    at = DAY + timedelta(hours=12)

    first = run_now(target, template, JOB, at=at)
    second = run_now(target, template, JOB, at=at)

    assert (first["outcome"], second["outcome"]) == ("executed", "duplicate")
    assert first["scheduled_time"] == second["scheduled_time"] == "2026-11-29T12:00:00Z"
    entry = _ledger(tables)["2026-11-29T12:00:00Z"]
    assert (entry["trigger"]["S"], entry["attempts"]["N"]) == ("manual", "1")


def test_run_now_refuses_an_instant_that_is_not_a_whole_minute_as_the_trigger_does(
    target: LocalTarget, dynamodb_endpoint: str, tables: Any
) -> None:
    # Not truncated to the 12:00 tick: refused with the trigger's and the kit's sentence, nothing run.
    for extra in ([], ["--off-schedule"]):
        result = CliRunner().invoke(
            app, ["run-now", JOB, "--at", "2026-11-29T12:00:30Z", *extra, "--endpoint", dynamodb_endpoint]
        )

        assert result.exit_code == 2, result.output
        assert result.stderr == (
            "error: --at must be a whole minute in UTC (seconds 00), got '2026-11-29T12:00:30Z' = "
            "2026-11-29T12:00:30Z\n"
        )
    assert "2026-11-29T12:00:00Z" not in _ledger(tables)


def test_run_now_refuses_an_instant_off_the_schedule_unless_asked_and_records_it_so(
    target: LocalTarget, template: Template, tables: Any
) -> None:
    _seed_sessions()
    off = DAY + timedelta(hours=21, minutes=30)

    with pytest.raises(OperationError) as refused:
        run_now(target, template, JOB, at=off, now=off + timedelta(hours=1))

    assert str(refused.value) == (
        f"--at 2026-11-29T21:30:00Z is not a tick of {JOB}'s schedule cron(0 * * * ? *) (scheduled times: before it "
        "2026-11-29T21:00:00Z, after it 2026-11-29T22:00:00Z); name one of them, or pass --off-schedule to run at "
        "this instant anyway (recorded with trigger off-schedule)"
    )
    assert "2026-11-29T21:30:00Z" not in _ledger(tables)

    ran = run_now(target, template, JOB, at=off, now=off + timedelta(hours=1), off_schedule=True)

    assert ran["outcome"] == "executed"
    assert _ledger(tables)["2026-11-29T21:30:00Z"]["trigger"]["S"] == "off-schedule"


def test_run_now_without_at_runs_the_latest_scheduled_tick(target: LocalTarget, template: Template) -> None:
    ran = run_now(target, template, JOB, now=DAY + timedelta(hours=12, minutes=37, seconds=5))

    assert ran["scheduled_time"] == "2026-11-29T12:00:00Z"


def test_cli_status_backfill_and_run_now(
    target: LocalTarget, dynamodb_endpoint: str, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)
    runner = CliRunner()
    window = ["--window-days", str((datetime.now(UTC) - DAY).total_seconds() / 86400)]

    status = runner.invoke(app, ["status", "--endpoint", dynamodb_endpoint, "--json", *window])
    assert status.exit_code == 1, status.output
    assert "2026-11-29T03:00:00Z" in status.output

    backfill_the_night = ["backfill", JOB, "--from", "2026-11-29T02:00:00Z", "--to", "2026-11-29T07:00:00Z"]
    filled = runner.invoke(app, [*backfill_the_night, "--endpoint", dynamodb_endpoint])
    assert filled.exit_code == 0, filled.output
    assert "2026-11-29T03:00:00Z  ran: succeeded: found " in filled.output

    again = runner.invoke(app, [*backfill_the_night, "--endpoint", dynamodb_endpoint])
    assert "nothing to do" in again.output

    bad = runner.invoke(app, ["backfill", JOB, "--from", "yesterday", "--to", "2026-11-29T12:00:00Z"])
    assert bad.exit_code == 2
    assert "--from" in bad.output

    off = runner.invoke(app, ["run-now", JOB, "--at", "2026-11-29T12:30:00Z", "--endpoint", dynamodb_endpoint])
    assert off.exit_code == 2
    (refused,) = off.stderr.splitlines()  # nothing ran: no function log to point at
    assert refused.startswith("error: --at 2026-11-29T12:30:00Z is not a tick of ")
    manual = runner.invoke(app, ["run-now", JOB, "--at", "2026-11-29T12:00:00Z", "--endpoint", dynamodb_endpoint])
    assert "ran" in manual.output
    duplicate = runner.invoke(app, ["run-now", JOB, "--at", "2026-11-29T12:00:00Z", "--endpoint", dynamodb_endpoint])
    assert "was already done" in duplicate.output
    assert "duplicate (duplicate)" not in duplicate.output


def test_cli_run_now_says_what_the_tick_did_in_utc_with_its_logs_in_a_file(
    target: LocalTarget, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    _seed_sessions()
    log = tmp_path / "run-now.log"
    # 13:00 at +01:00 is 12:00 UTC: converted, and echoed in UTC.
    command = ["run-now", JOB, "--at", "2026-11-29T13:00:00+01:00", "--endpoint", dynamodb_endpoint, "--log", str(log)]

    # A process of its own, as a user runs it: the functions' loggers write to its real stdout/stderr.
    first = subprocess.run(
        [sys.executable, "-m", "clockless_tools.cli", *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    again = CliRunner().invoke(app, command)

    assert first.returncode == 0, first.stderr
    # What the ledger says the fanned-out tick did once its workers finished: its counters.
    assert first.stdout == (
        f"{JOB} @ 2026-11-29T12:00:00Z ran: succeeded: found 12, applied 12, already done 0, failed 0, partitions 16\n"
    )
    # Where the logs went, on stderr as every command that runs functions says it; no function log line.
    assert first.stderr == f"function logs and metrics: {log}\n"
    written = log.read_text(encoding="utf-8")
    assert '"message":"tick executed"' in written
    # The log lines' times read as every other time: ISO-8601 UTC with Z.
    stamps = re.findall(r'"timestamp":"([^"]+)"', written)
    assert stamps
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp) for stamp in stamps), stamps[:3]
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[0].startswith(f"{JOB} @ 2026-11-29T12:00:00Z was already done (finished ")
    assert "duplicate" not in again.stdout


def test_cli_backfill_echoes_its_range_in_utc(target: LocalTarget, dynamodb_endpoint: str, tmp_path: Path) -> None:
    command = ["backfill", JOB, "--from", "2026-11-29T01:00:00+01:00", "--to", "2026-11-29T03:00:00+01:00"]

    result = CliRunner().invoke(app, [*command, "--dry-run", "--endpoint", dynamodb_endpoint])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(
        f"{JOB}: 2 missing tick(s) in [2026-11-29T00:00:00Z, 2026-11-29T02:00:00Z) on "
    )


def test_cli_run_now_on_a_tick_whose_partitions_fail_prints_one_line_and_exits_3(
    target: LocalTarget, tables: Any, dynamodb_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*_: Any, **__: Any) -> Any:
        raise ConnectionError("sessions index unreachable\n  while reading the first page")

    monkeypatch.setattr(SessionPartitionWork, "read", unavailable)
    log = tmp_path / "run-now.log"

    result = CliRunner().invoke(
        app, ["run-now", JOB, "--at", "2026-11-29T00:00:00Z", "--endpoint", dynamodb_endpoint, "--log", str(log)]
    )

    assert result.exit_code == 3
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()  # one line: no error text split across lines, no traceback
    assert line.startswith(
        f"error: {JOB} @ 2026-11-29T00:00:00Z was claimed and fanned out to 16 partition(s), "
        "and its partitions are failing (SessionCleanupWorkerFunction failed on 16 message(s): "
    )
    assert "sessions index unreachable while reading the first page" in line
    assert line.endswith(f"; function logs: {log}")

    # Delivered again while its partitions still fail: not "already done", and exit 3 again.
    again = CliRunner().invoke(
        app, ["run-now", JOB, "--at", "2026-11-29T00:00:00Z", "--endpoint", dynamodb_endpoint, "--log", str(log)]
    )

    assert again.exit_code == 3, again.output
    assert "was already done" not in again.output
    (line,) = again.stderr.splitlines()
    assert line.startswith(f"error: {JOB} @ 2026-11-29T00:00:00Z is failing, not done: 0/16 partitions done")
    assert "first error: ConnectionError: sessions index unreachable while reading the first page;" in line
    # One short line: each partition's error is `status`'s to show.
    assert len(line) < 600, len(line)
    assert "delivering it again runs nothing" in line
    assert f"`clockless work redrive {JOB}`" in line

    the_tick = ["--from", "2026-11-29T00:00:00Z", "--to", "2026-11-29T00:01:00Z"]
    backfilled = CliRunner().invoke(
        app, ["backfill", JOB, *the_tick, "--endpoint", dynamodb_endpoint, "--log", str(log)]
    )

    assert backfilled.exit_code == 3, backfilled.output
    assert "replayed: 0, not done: 1" in backfilled.stdout
    assert "2026-11-29T00:00:00Z  " + f"{JOB} @ 2026-11-29T00:00:00Z is failing, not done" in backfilled.stdout


def test_a_failing_tick_is_reported_in_one_line_and_recorded_as_failed(
    target: LocalTarget, template: Template, tables: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*_: Any, **__: Any) -> Any:
        raise ConnectionError("work queue unreachable")

    monkeypatch.setattr(FanOut, "start", unavailable)

    with pytest.raises(OperationError, match="SessionCleanupFunction failed: ConnectionError: work queue"):
        run_now(target, template, JOB, at=DAY)

    assert _ledger(tables)["2026-11-29T00:00:00Z"]["status"]["S"] == "failed"


def test_a_failing_worker_is_reported_in_one_line_and_its_tick_stays_running(
    target: LocalTarget, template: Template, tables: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*_: Any, **__: Any) -> Any:
        raise ConnectionError("sessions index unreachable")

    monkeypatch.setattr(SessionPartitionWork, "read", unavailable)

    with pytest.raises(OperationError, match="SessionCleanupWorkerFunction failed on 16 message"):
        run_now(target, template, JOB, at=DAY)

    entry = _ledger(tables)["2026-11-29T00:00:00Z"]
    # The coordinator fanned out; no partition is done, so the tick is not succeeded (the dead-man
    # alarm's business) and each message comes back after the work queue's visibility timeout.
    assert (entry["status"]["S"], entry["partitions_total"]["N"]) == ("started", "16")
    assert entry.get("partitions_done", {"N": "0"})["N"] == "0"


def test_cli_backfill_writes_function_logs_to_a_file_and_says_where(
    target: LocalTarget, dynamodb_endpoint: str, tmp_path: Path, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)
    log = tmp_path / "backfill.log"
    command = [sys.executable, "-m", "clockless_tools.cli", "backfill", JOB, "--endpoint", dynamodb_endpoint]
    command += ["--from", "2026-11-29T02:00:00Z", "--to", "2026-11-29T07:00:00Z", "--log", str(log)]

    ran = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        f"{JOB}: 2 missing tick(s) in [2026-11-29T02:00:00Z, 2026-11-29T07:00:00Z) on local runtime "
        f"({dynamodb_endpoint})",
        "  2026-11-29T03:00:00Z  ran: succeeded: found 0, applied 0, already done 0, failed 0, partitions 16",
        "  2026-11-29T05:00:00Z  ran: succeeded: found 0, applied 0, already done 0, failed 0, partitions 16",
        "replayed: 2",
    ]
    # Where the logs went, on stderr; no JSON log line, no EMF line on the terminal.
    assert ran.stderr == f"function logs and metrics: {log}\n"
    written = log.read_text(encoding="utf-8")
    assert written.count('"message":"tick executed"') == 2
    # At least once per tick: two workers finishing at once may both report it (docs/alarms.md).
    assert written.count('"TickSucceeded":[1.0]') >= 2


def test_backfill_tells_its_total_before_the_first_tick(
    target: LocalTarget, template: Template, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)
    events: list[object] = []

    backfill(
        template,
        target,
        JOB,
        start=FIRST,
        end=END,
        policy=BackfillPolicy.ALL,
        on_plan=lambda planned: events.append(len(planned)),
        on_tick=lambda scheduled_time, _outcome: events.append(scheduled_time),
    )

    assert events == [2, *DROPPED]


def test_cli_status_in_a_pipe_prints_whole_times_and_spans(
    target: LocalTarget, dynamodb_endpoint: str, tables: Any, gapped_night: Snapshot
) -> None:
    load_tables(tables, gapped_night)

    # CliRunner's stdout is not a terminal, as in `clockless status | cat` or CI.
    result = CliRunner().invoke(app, ["status", "--endpoint", dynamodb_endpoint, "--window-days", "50"])

    assert result.exit_code == 1, result.output
    assert re.search(r"\d…", result.stdout) is None  # no time cut short
    assert "2026-11-29T06:00:00Z" in result.stdout  # the last success, whole
    assert f"local runtime ({dynamodb_endpoint}), last 50 d" in result.stdout
