"""Recovery on a bad night, as an on-call operator runs it: a tick whose partition messages were
purged restarts with one documented command, a paused job runs through no door without an explicit
override, and every command's exit code and line are the named tick's, not another job's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless import Trigger
from clockless_tools.cli.app import app
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.services import create_schedules
from clockless_tools.operations.targets import LocalTarget, tick_event
from clockless_tools.operations.work import work_queues
from clockless_tools.template.model import Template
from session_cleanup.logic import SessionRef
from session_cleanup.repository import DynamoSessionStore, SessionPartitionWork
from tests.integration.conftest import scan_all
from tests.jobs import jobs

JOB = "session-cleanup"
DAY = datetime(2026, 11, 29, tzinfo=UTC)
AT = DAY + timedelta(hours=12)
TICK = "2026-11-29T12:00:00Z"
ONE_TICK = ["--from", TICK, "--to", "2026-11-29T12:01:00Z"]


@pytest.fixture
def target(tables: Any, local_queues: Any, template: Template, dynamodb_endpoint: str) -> LocalTarget:
    return LocalTarget(template, dynamodb_endpoint)


def _cli(endpoint: str, *arguments: str) -> Any:
    return CliRunner().invoke(app, [*arguments, "--endpoint", endpoint])


def _seed_sessions(count: int = 12) -> None:
    DynamoSessionStore("SessionsTable").start_sessions(
        [SessionRef("tenant-a", f"s-{n:02d}", DAY + timedelta(hours=n - 3)) for n in range(count)]
    )


def _fan_out_and_lose_the_messages(target: LocalTarget, template: Template, local_queues: Any) -> None:
    """The coordinator claims the tick and sends its partitions (`clockless invoke --no-drain`), and
    the work queue is purged before any worker takes one."""
    function = template.function_for_job(JOB).logical_id
    target.runtime.invoke(function, tick_event(target, JOB, AT, Trigger.SCHEDULE))
    local_queues.purge_queue(QueueUrl=target.queue_url(work_queues(template, JOB).queue))


def _ledger(tables: Any) -> dict[str, dict[str, Any]]:
    return {item["scheduled_time"]["S"]: item for item in scan_all(tables, "LedgerTable") if item["job"]["S"] == JOB}


# ------------------------------------------------------------------------------------ a stuck tick restarts
def test_a_tick_whose_messages_were_purged_is_not_called_done_and_restarts_with_every_item_applied_once(
    target: LocalTarget, template: Template, tables: Any, local_queues: Any, dynamodb_endpoint: str
) -> None:
    _seed_sessions()
    _fan_out_and_lose_the_messages(target, template, local_queues)

    # Delivered again: answered from the idempotency record, nothing runs; and it says so.
    again = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK)
    assert again.exit_code == 3, again.output
    assert "was already done" not in again.output
    (line,) = again.stderr.splitlines()
    assert line.startswith(f"error: {JOB} @ {TICK} is not done: fanned out to 16 partition(s), 0 done")
    assert f"`clockless run-now {JOB} --at {TICK} --restart` sends the 16 not done again" in line

    backfilled = _cli(dynamodb_endpoint, "backfill", JOB, *ONE_TICK)
    assert backfilled.exit_code == 3, backfilled.output
    assert "replayed: 0, not done: 1" in backfilled.stdout
    assert "replayed: 1" not in backfilled.stdout

    restarted = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK, "--restart")
    assert restarted.exit_code == 0, restarted.output
    assert restarted.stdout == (
        f"{JOB} @ {TICK} restarted: re-sent 16 of 16 partition(s) (those not done: 0 done, 0 held by a live "
        "worker, left alone); then succeeded: found 12, applied 12, already done 0, failed 0, partitions 16\n"
    )
    entry = _ledger(tables)[TICK]
    assert (entry["status"]["S"], entry["partitions_done"]["N"]) == ("succeeded", "16")
    assert scan_all(tables, "SessionsTable") == []  # each session deleted, once

    # Once done, a restart changes nothing and says why; a delivery says it was done.
    twice = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK, "--restart")
    assert twice.exit_code == 2
    assert twice.stderr == f"error: --restart: {JOB} @ {TICK} is succeeded, not started: nothing to restart\n"
    done = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK)
    assert done.exit_code == 0, done.output
    assert "was already done" in done.stdout


def test_a_restart_resends_only_the_partitions_not_done(
    target: LocalTarget, template: Template, tables: Any, local_queues: Any, dynamodb_endpoint: str
) -> None:
    _seed_sessions()
    function = template.function_for_job(JOB).logical_id
    target.runtime.invoke(function, tick_event(target, JOB, AT, Trigger.SCHEDULE))
    # Five partitions run, then the other eleven messages are lost.
    url = target.queue_url(work_queues(template, JOB).queue)
    worker = work_queues(template, JOB).worker
    taken = local_queues.receive_message(QueueUrl=url, MaxNumberOfMessages=5)["Messages"]
    event = {"Records": [_record(message) for message in taken]}
    target.runtime.invoke(worker, event)
    local_queues.purge_queue(QueueUrl=url)

    restarted = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK, "--restart")

    assert restarted.exit_code == 0, restarted.output
    assert restarted.stdout.startswith(
        f"{JOB} @ {TICK} restarted: re-sent 11 of 16 partition(s) (those not done: 5 done, 0 held"
    )
    assert "then succeeded: found 12, applied 12, already done 0, failed 0" in restarted.stdout


def _record(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0"},
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:work",
        "awsRegion": "us-east-1",
    }


# ------------------------------------------------------------------------------------------ pause pauses
def test_a_paused_job_runs_through_no_door_without_an_override_which_the_ledger_records(
    target: LocalTarget, template: Template, tables: Any, dynamodb_endpoint: str
) -> None:
    create_schedules(template, dynamodb_endpoint)
    paused = _cli(dynamodb_endpoint, "pause", JOB, "--reason", "vendor API down")
    assert paused.exit_code == 0, paused.output
    try:
        _refused_unless_overridden(tables, dynamodb_endpoint)
    finally:
        # The schedules outlive the test's tables on the shared server: leave the job running.
        resumed = _cli(dynamodb_endpoint, "resume", JOB)
    assert resumed.exit_code == 0, resumed.output
    ran = _cli(dynamodb_endpoint, "run-now", JOB, "--at", "2026-11-29T13:00:00Z")
    assert ran.exit_code == 0, ran.output


def _refused_unless_overridden(tables: Any, dynamodb_endpoint: str) -> None:

    for command in (
        ["run-now", JOB, "--at", TICK],
        ["run-now", JOB, "--at", TICK, "--restart"],
        ["backfill", JOB, *ONE_TICK],
    ):
        refused = _cli(dynamodb_endpoint, *command)
        assert refused.exit_code == 5, (command, refused.output)
        (line,) = refused.stderr.splitlines()
        assert line.startswith(f"error: {JOB} is paused (since "), line
        assert " by " in line
        assert ": vendor API down): " in line
        assert "--override-pause" in line
        assert refused.stdout == ""
    assert TICK not in _ledger(tables)

    overridden = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK, "--override-pause")
    assert overridden.exit_code == 0, overridden.output
    assert _ledger(tables)[TICK]["status"]["S"] == "succeeded"
    (record,) = [item for item in _ledger(tables).values() if item["status"]["S"] == "pause-overridden"]
    assert record["tick"]["S"] == TICK
    assert f"run-now ran {TICK} despite the pause" in record["reason"]["S"]
    # Still paused: an override runs one tick, it does not resume the job.
    assert _cli(dynamodb_endpoint, "run-now", JOB, "--at", "2026-11-29T13:00:00Z").exit_code == 5


# --------------------------------------------------------------------- a command judges only its tick
def test_another_jobs_failures_are_not_this_ticks(
    target: LocalTarget, template: Template, tables: Any, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another fanned-out job's tick waits on its own queue, and its workers fail on every message.
    other = next(job for job in jobs(template) if job.worker_id is not None and job.name != JOB)
    target.runtime.invoke(other.function_id, tick_event(target, other.name, AT, Trigger.SCHEDULE))
    real_call = LocalLambdaRuntime.call

    def broken_index(runtime: LocalLambdaRuntime, logical_id: str, event: Any) -> Any:
        if logical_id == other.worker_id:
            raise ConnectionError("index unreachable")
        return real_call(runtime, logical_id, event)

    monkeypatch.setattr(LocalLambdaRuntime, "call", broken_index)
    _seed_sessions()

    healthy = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK)

    assert healthy.exit_code == 0, healthy.output
    assert healthy.stdout.startswith(f"{JOB} @ {TICK} ran: succeeded: found 12, applied 12")
    assert other.worker_id not in healthy.output
    # The other job's messages were left to its own workers: none was received.
    waiting = (
        LocalTarget(template, dynamodb_endpoint)
        .sqs()
        .get_queue_attributes(
            QueueUrl=target.queue_url(template.work_queue_for_job(other.name).logical_id),
            AttributeNames=["ApproximateNumberOfMessages"],
        )
    )
    assert int(waiting["Attributes"]["ApproximateNumberOfMessages"]) == other.shards or other.shards == 0


def test_a_tick_that_ended_failed_exits_non_zero(
    *, target: LocalTarget, dynamodb_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed_sessions(3)
    real_item_of = SessionPartitionWork.item_of

    def one_bad_row(self: SessionPartitionWork, row: Any) -> Any:
        if row.get("session_id", {}).get("S") == "s-01":
            raise ValueError("started_at is not a time")
        return real_item_of(self, row)

    monkeypatch.setattr(SessionPartitionWork, "item_of", one_bad_row)

    ran = _cli(dynamodb_endpoint, "run-now", JOB, "--at", TICK)

    assert ran.exit_code == 3, ran.output
    (line,) = ran.stderr.splitlines()
    assert line.startswith(f"error: {JOB} @ {TICK} ended failed: ")
    assert len(line) < 400
    assert f"`clockless work redrive {JOB}`" in line

    backfilled = _cli(dynamodb_endpoint, "backfill", JOB, *ONE_TICK)
    assert backfilled.exit_code == 3, backfilled.output
    assert "replayed: 0, not done: 1" in backfilled.stdout
    assert f"  {TICK}  {JOB} @ {TICK} ended failed" in backfilled.stdout

    # `invoke` of the next tick, which fails the same way: exit 1, its tick line says failed.
    event = tmp_path / "tick.json"
    later = tick_event(target, JOB, AT + timedelta(hours=1), Trigger.SCHEDULE)
    event.write_text(json.dumps(later), encoding="utf-8")
    _seed_sessions(3)
    function = target.template.function_for_job(JOB).logical_id
    invoked = _cli(dynamodb_endpoint, "invoke", function, "-e", str(event), "--log", str(tmp_path / "invoke.log"))
    assert invoked.exit_code == 1, invoked.output
    assert json.loads(invoked.stdout.splitlines()[1])["status"] == "failed"


# ------------------------------------------------------------------------- a redrive that fails again
def test_a_redrive_whose_messages_fail_again_says_so_in_one_line_and_exits_3(
    *,
    target: LocalTarget,
    template: Template,
    local_queues: Any,
    dynamodb_endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A claimed tick's partition message rests in the work DLQ; the index it reads is still down.
    queues = work_queues(template, JOB)
    function = template.function_for_job(JOB).logical_id
    target.runtime.invoke(function, tick_event(target, JOB, AT, Trigger.SCHEDULE))
    work_url, dead_url = target.queue_url(queues.queue), target.queue_url(queues.dead_letter_queue)
    (message,) = local_queues.receive_message(QueueUrl=work_url, MaxNumberOfMessages=1)["Messages"]
    local_queues.purge_queue(QueueUrl=work_url)
    local_queues.send_message(QueueUrl=dead_url, MessageBody=message["Body"])

    def unavailable(*_: Any, **__: Any) -> Any:
        raise ConnectionError("sessions index unreachable")

    monkeypatch.setattr(SessionPartitionWork, "read", unavailable)
    log = tmp_path / "redrive.log"

    redriven = _cli(dynamodb_endpoint, "work", "redrive", JOB, "--log", str(log))

    assert redriven.exit_code == 3, redriven.output
    (line,) = redriven.stdout.splitlines()
    assert line.startswith(
        f"{JOB}: moved 1 message(s) from {queues.dead_letter_queue} to {queues.queue} on local runtime"
    )
    assert f"; 1 of them failed again ({queues.worker}" in line
    assert "the cause is not fixed yet" in line
    # No function's JSON log on the terminal: it is in the log file, and stderr says where.
    assert redriven.stderr == f"function logs and metrics: {log}\n"
