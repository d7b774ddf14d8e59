"""`clockless status` shows a fanned-out tick's progress from the ledger records docs/fan-out.md
describes: partitions done out of total, and the lane and partition counters summed so far."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from clockless.ledger import RunLedger
from clockless_tools.operations.progress import fanned_out_ticks
from clockless_tools.operations.status import job_status
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.template.model import Template

JOB = "session-cleanup"
RUNNING, FINISHED = "2026-11-29T10:00:00Z", "2026-11-29T09:00:00Z"
NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)


def put(client: Any, **attributes: Any) -> None:
    item = {name: {"N": str(value)} if isinstance(value, int) else {"S": value} for name, value in attributes.items()}
    client.put_item(TableName="LedgerTable", Item=item)


def seed_ledger(client: Any) -> None:
    # A tick whose 4 partitions are under way: 2 done, 1 running, 1 not started.
    put(client, job=JOB, scheduled_time=RUNNING, status="started", attempts=1, partitions_total=4, partitions_done=2)
    put(client, job=f"{JOB}#work", scheduled_time=f"{RUNNING}#p0", status="done")
    # A failed item is counted on its lane; the partition keeps its key for the replay, which
    # later counts it out again here (failed -1, applied +1).
    put(client, job=f"{JOB}#work", scheduled_time=f"{RUNNING}#p1", status="done")
    put(client, job=f"{JOB}#work", scheduled_time=f"{RUNNING}#p2", status="running")
    put(client, job=f"{JOB}#work", scheduled_time=f"{RUNNING}#p0#l0", applied=40, already_done=2, failed=0)
    put(client, job=f"{JOB}#work", scheduled_time=f"{RUNNING}#p0#l1", applied=35, already_done=0, failed=0)
    put(client, job=f"{JOB}#work", scheduled_time=f"{RUNNING}#p1#l0", applied=10, already_done=0, failed=1)
    put(client, job=f"{JOB}#work", scheduled_time=f"{RUNNING}#p2#l0", applied=7, already_done=1, failed=0)
    # A finished tick: its summary is the whole tick's.
    summary = json.dumps({"found": 12, "applied": 11, "already_done": 1, "failed": 0, "partitions": 4})
    put(
        client,
        job=JOB,
        scheduled_time=FINISHED,
        status="succeeded",
        attempts=1,
        partitions_total=4,
        partitions_done=4,
        summary=summary,
        succeeded_job=JOB,
    )
    # A tick that did not fan out is not listed.
    put(client, job=JOB, scheduled_time="2026-11-29T08:00:00Z", status="succeeded", attempts=1)


def test_a_running_tick_shows_partitions_done_and_the_counters_so_far(tables: Any, template: Template) -> None:
    seed_ledger(tables)
    ledger = RunLedger("LedgerTable", tables, retention_seconds=86400)

    (running,) = [t for t in fanned_out_ticks(ledger, JOB, NOW - timedelta(hours=2), NOW) if t.status == "started"]

    assert (running.partitions_done, running.partitions_total, running.partitions_running) == (2, 4, 1)
    assert (running.applied, running.already_done, running.failed) == (92, 3, 1)
    assert running.describe() == "2/4 partitions done (1 running), 92 applied, 3 already done, 1 failed"


def test_status_lists_the_running_tick_and_the_latest_one(
    tables: Any, template: Template, dynamodb_endpoint: str
) -> None:
    seed_ledger(tables)

    status = job_status(template, LocalTarget(template, dynamodb_endpoint), JOB, now=NOW, window=timedelta(hours=3))

    shown = {progress.as_dict()["scheduled_time"]: progress for progress in status.fanned_out}
    assert list(shown) == [RUNNING]  # the running tick is the latest one
    assert status.as_dict()["fanned_out"][0]["partitions_done"] == 2
    finished = fanned_out_ticks(
        RunLedger("LedgerTable", tables, retention_seconds=86400), JOB, NOW - timedelta(hours=3), NOW
    )
    assert next((t.status, t.applied, t.already_done) for t in finished) == ("succeeded", 11, 1)
