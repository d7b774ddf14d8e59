"""`clockless status` shows a fanned-out tick's progress from the ledger records docs/fan-out.md
describes: partitions done out of total, and the lane and partition counters summed so far."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from clockless.ledger import RunLedger
from clockless_tools.operations.progress import fanned_out_ticks
from clockless_tools.operations.status import fanned_out_lines, job_status, table_cells
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.operations.work import show, work_queues
from clockless_tools.template.model import Template
from tests.jobs import fanned_out

# A fanned-out job: its progress is its partitions and lanes.
JOB = fanned_out()[0].name
RUNNING, FINISHED = "2026-11-29T10:00:00Z", "2026-11-29T09:00:00Z"
NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)


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

    (running,) = [
        t for t in fanned_out_ticks(ledger, JOB, NOW - timedelta(hours=2), NOW, now_ms=NOW_MS) if t.status == "started"
    ]

    assert (running.partitions_done, running.partitions_total, running.partitions_running) == (2, 4, 1)
    assert (running.applied, running.already_done, running.failed) == (92, 3, 1)
    assert running.describe() == (
        "2/4 partitions done (1 running, 1 not started), 92 applied, 3 already done, 1 failed"
    )
    assert (running.shown_status, running.troubles()) == ("started", [])


FAILING = "2026-11-29T10:15:00Z"


def seed_failing_tick(client: Any) -> None:
    """A tick of 7 partitions in every state a partition can be in, as the kit's records say it."""
    later, earlier = str(NOW_MS + 60_000), str(NOW_MS - 60_000)
    put(client, job=JOB, scheduled_time=FAILING, status="started", attempts=1, partitions_total=7, partitions_done=1)
    work = f"{JOB}#work"
    put(client, job=work, scheduled_time=f"{FAILING}#p0", status="done", lease_until=0, hops=0)
    put(client, job=work, scheduled_time=f"{FAILING}#p1", status="running", lease_until=int(later), hops=2)
    # Handed on for a continuation: the lease released, the cursor kept.
    put(client, job=work, scheduled_time=f"{FAILING}#p2", status="running", lease_until=0, cursor="{}", hops=1)
    # The i20-throttle fields: the receive count at acquire and the attempt's error (one line or not).
    put(
        client,
        job=work,
        scheduled_time=f"{FAILING}#p3",
        status="running",
        lease_until=int(earlier),
        receives=3,
        last_error="ConnectionError: sessions index unreachable\n  (while reading page 2)",
        throttle_continuations=1,
    )
    # Without them: a lease that ran out on a partition not done is an attempt that died.
    put(client, job=work, scheduled_time=f"{FAILING}#p4", status="running", lease_until=int(earlier))
    put(client, job=work, scheduled_time=f"{FAILING}#p5", status="running", lease_until=int(earlier), receives=5)
    # A continuation after throttling, running: the kit's throttle note is not a failure.
    put(
        client,
        job=work,
        scheduled_time=f"{FAILING}#p6",
        status="running",
        lease_until=int(later),
        receives=1,
        hops=1,
        throttle_continuations=1,
        last_error="throttled: 8 attempts over 7.0 s, continued after 4 s",
    )


def test_each_partition_of_a_failing_tick_has_its_state_and_the_tick_is_failing(tables: Any) -> None:
    seed_failing_tick(tables)
    ledger = RunLedger("LedgerTable", tables, retention_seconds=86400)

    (tick,) = fanned_out_ticks(ledger, JOB, NOW - timedelta(hours=1), NOW, now_ms=NOW_MS, max_receives=5)

    assert [(p.partition, p.state.value) for p in tick.partitions] == [
        ("0", "done"),
        ("1", "running"),
        ("2", "continued"),
        ("3", "retrying"),
        ("4", "retrying"),
        ("5", "dead-lettered"),
        ("6", "running"),
    ]
    assert (tick.status, tick.shown_status, tick.as_dict()["status"]) == ("started", "failing", "failing")
    assert tick.describe() == (
        "1/7 partitions done (2 running, 1 continued, 2 retrying, 1 dead-lettered), 0 applied, 0 already done, 0 failed"
    )
    assert tick.troubles() == [
        "p3 retrying (receive 3, 1 after throttling, last error: ConnectionError: sessions index unreachable "
        "(while reading page 2))",
        "p4 retrying",
        "p5 dead-lettered (receive 5)",
    ]
    assert all("\n" not in line for line in tick.troubles())
    assert tick.partitions[6].describe() == (
        "p6 running (receive 1, 1 continuation(s), 1 after throttling, "
        "last error: throttled: 8 attempts over 7.0 s, continued after 4 s)"
    )


def test_status_reads_dead_lettered_partitions_from_their_records_and_never_receives_the_dlq(
    tables: Any, template: Template, dynamodb_endpoint: str
) -> None:
    seed_failing_tick(tables)
    target = LocalTarget(template, dynamodb_endpoint)
    queues = work_queues(template, JOB)
    # The work queue's last receive of p5 failed: SQS moved its message to the dead-letter queue.
    dead = target.queue_url(queues.dead_letter_queue)
    body = {"kind": "partition", "job": JOB, "scheduled_time": FAILING, "partition": "5", "trigger": "schedule"}
    target.sqs().send_message(QueueUrl=dead, MessageBody=json.dumps(body))

    statuses = [job_status(template, target, JOB, now=NOW, window=timedelta(hours=1)) for _ in range(3)]

    (tick,) = statuses[-1].fanned_out
    states = {p.partition: p.state.value for p in tick.partitions}
    assert (states["4"], states["5"]) == ("retrying", "dead-lettered")
    assert statuses[-1].as_dict()["fanned_out"][0]["status"] == "failing"
    # Looking changed nothing: the message was never received, so this first receive is its first.
    (message,) = target.sqs().receive_message(QueueUrl=dead, AttributeNames=["ApproximateReceiveCount"])["Messages"]
    assert message["Attributes"]["ApproximateReceiveCount"] == "1"


def test_status_lists_the_running_tick_and_the_latest_one(
    tables: Any, template: Template, dynamodb_endpoint: str
) -> None:
    seed_ledger(tables)

    status = job_status(template, LocalTarget(template, dynamodb_endpoint), JOB, now=NOW, window=timedelta(hours=3))

    shown = {progress.as_dict()["scheduled_time"]: progress for progress in status.fanned_out}
    assert list(shown) == [RUNNING]  # the running tick is the latest one
    assert status.as_dict()["fanned_out"][0]["partitions_done"] == 2
    finished = fanned_out_ticks(
        RunLedger("LedgerTable", tables, retention_seconds=86400), JOB, NOW - timedelta(hours=3), NOW, now_ms=NOW_MS
    )
    assert next((t.status, t.applied, t.already_done) for t in finished) == ("succeeded", 11, 1)


def test_a_coordinator_that_raised_before_fanning_out_is_not_shown_fanned_out(
    tables: Any, template: Template, dynamodb_endpoint: str
) -> None:
    """The claim wrote partitions_total, then the coordinator raised: no partition record exists."""
    put(
        tables,
        job=JOB,
        scheduled_time=FAILING,
        status="failed",
        attempts=3,
        partitions_total=16,
        error="ConnectionError: programs index unreachable",
    )

    status = job_status(template, LocalTarget(template, dynamodb_endpoint), JOB, now=NOW, window=timedelta(hours=1))

    assert fanned_out_lines(status) == [
        f"{JOB} @ {FAILING} failed before fanning out: its coordinator raised "
        "(ConnectionError: programs index unreachable); none of its 16 partition(s) started"
    ]
    assert table_cells(status)[2] == [f"{FAILING} failed", "ConnectionError: programs index unreachable"]


def test_a_failing_tick_is_the_last_failure(tables: Any, template: Template, dynamodb_endpoint: str) -> None:
    seed_failing_tick(tables)

    status = job_status(template, LocalTarget(template, dynamodb_endpoint), JOB, now=NOW, window=timedelta(hours=1))

    assert status.failing == [datetime(2026, 11, 29, 10, 15, tzinfo=UTC)]
    assert status.as_dict()["failing"] == [FAILING]
    assert table_cells(status)[2] == [f"{FAILING} failing", "partitions failing: see below"]
    # --json says what the table says (before: null, as no entry is `failed` yet).
    document = status.as_dict()
    assert document["last_failure"] == {
        "scheduled_time": FAILING,
        "status": "failing",
        "ledger_status": "started",
        "error": "3 partition(s) failing: p3 retrying (receive 3, 1 after throttling, last error: "
        "ConnectionError: sessions index unreachable (while reading page 2))",
        "partitions_failing": ["3", "4", "5"],
    }
    assert document["last_failed"] is None


def test_work_show_names_a_dead_lettered_partition_with_its_records_last_error(
    tables: Any, template: Template, dynamodb_endpoint: str
) -> None:
    seed_failing_tick(tables)
    error = "ConnectionError: sessions index unreachable"
    earlier = NOW_MS - 60_000
    put(tables, job=f"{JOB}#work", scheduled_time=f"{FAILING}#p5", status="running", lease_until=earlier, receives=5)
    tables.update_item(
        TableName="LedgerTable",
        Key={"job": {"S": f"{JOB}#work"}, "scheduled_time": {"S": f"{FAILING}#p5"}},
        UpdateExpression="SET last_error = :e",
        ExpressionAttributeValues={":e": {"S": error}},
    )
    target = LocalTarget(template, dynamodb_endpoint)
    queues = work_queues(template, JOB)
    dead = target.queue_url(queues.dead_letter_queue)
    body = {"kind": "partition", "job": JOB, "scheduled_time": FAILING, "partition": "5", "trigger": "schedule"}
    target.sqs().send_message(QueueUrl=dead, MessageBody=json.dumps(body))

    from_ledger = show(target, template, JOB, now=NOW)
    read = show(target, template, JOB, now=NOW, messages=True)

    assert from_ledger.dead_letter_messages == 1
    assert [(x.kind, x.scheduled_time, x.partition, x.receive_count, x.error) for x in from_ledger.dead_letters] == [
        ("partition", FAILING, "5", 5, error)
    ]
    assert [(x.partition, x.error) for x in read.dead_letters] == [("5", error)]
