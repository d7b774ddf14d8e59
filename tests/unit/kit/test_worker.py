"""The worker on one partition at a time: duplicates, a live lease, the time budget, failed items
and their replay, malformed messages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout import FanOut
from clockless.fanout.keys import lane_key, partition_key, tick_key
from clockless.fanout.messages import WorkMessage
from clockless.fanout.store import PartitionStore, now_ms
from clockless.job import ScheduledJob
from clockless.ledger import LedgerEntry
from clockless.run import JobRun
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    OUTPUTS_TABLE,
    TOY_JOB,
    Context,
    FixedWork,
    ToyWork,
    bodies,
    drain,
    receive,
    seed,
    sqs_event,
    toy_job,
)

SCHEDULED = f"{BUSINESS_DATE}T02:00:00Z"
TICK = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}


def _entry(aws: Aws) -> dict[str, Any]:
    return dict(aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"])


def _summary(aws: Aws) -> dict[str, int]:
    return dict(json.loads(_entry(aws)["summary"]["S"]))


def _outputs(aws: Aws) -> list[dict[str, Any]]:
    return list(aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"])


def _ledger_work_records(aws: Aws) -> list[dict[str, Any]]:
    return list(
        aws.dynamodb.query(
            TableName="LedgerTable",
            KeyConditionExpression="job = :job",
            ExpressionAttributeValues={":job": {"S": f"{TOY_JOB}#work"}},
        )["Items"]
    )


def _partition_message(partition: str, hop: int = 0) -> str:
    return json.dumps(
        {
            "kind": "partition",
            "job": TOY_JOB,
            "scheduled_time": SCHEDULED,
            "trigger": "schedule",
            "partition": partition,
            "hop": hop,
            "params": {"until": BUSINESS_DATE},
        }
    )


def _deliver(worker: Any, body: str, context: Any = None) -> dict[str, Any]:
    event = sqs_event([{"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": body}])
    return dict(worker(event, context or Context()))


def test_a_duplicate_partition_message_changes_nothing(aws: Aws) -> None:
    seed(aws.dynamodb, 20)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    # every partition message delivered twice, as SQS may
    messages = receive(aws.sqs, aws.work_queue)
    for message in messages:
        aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody=message["Body"])
    drained = drain(aws.sqs, aws.work_queue, worker)
    assert drained.errors == []
    assert len(drained.outcomes) == 8

    assert len(_outputs(aws)) == 20
    assert _summary(aws) == {"found": 20, "applied": 20, "already_done": 0, "failed": 0, "partitions": 4}
    assert _entry(aws)["partitions_done"] == {"N": "4"}
    before = _ledger_work_records(aws)
    _deliver(worker, _partition_message("2"))
    assert _ledger_work_records(aws) == before


def test_a_second_tick_delivery_is_a_duplicate_and_sends_nothing(aws: Aws) -> None:
    seed(aws.dynamodb, 10)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    drain(aws.sqs, aws.work_queue, worker)

    again = coordinator(dict(TICK, attempt="2"), Context())

    assert again["outcome"] == "duplicate"
    assert bodies(aws.sqs, aws.work_queue) == []
    assert _entry(aws)["status"] == {"S": "succeeded"}


def test_a_partition_held_by_a_live_worker_is_left_to_it(aws: Aws) -> None:
    seed(aws.dynamodb, 10)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    live = PartitionStore(aws.dynamodb, "LedgerTable", TOY_JOB, SCHEDULED, "1", "someone-else", 86400)
    assert live.acquire(lease_until_ms=now_ms() + 60_000, hop=0).acquired

    response = _deliver(worker, _partition_message("1"))

    assert response == {"batchItemFailures": []}
    lanes = aws.dynamodb.get_item(TableName="LedgerTable", Key=lane_key(TOY_JOB, SCHEDULED, "1", 0))
    assert "Item" not in lanes
    record = aws.dynamodb.get_item(TableName="LedgerTable", Key=partition_key(TOY_JOB, SCHEDULED, "1"))["Item"]
    assert record["lease_owner"] == {"S": "someone-else"}


def test_an_expired_lease_is_taken_over(aws: Aws) -> None:
    seed(aws.dynamodb, 10)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    dead = PartitionStore(aws.dynamodb, "LedgerTable", TOY_JOB, SCHEDULED, "1", "a-dead-worker", 86400)
    assert dead.acquire(lease_until_ms=now_ms() - 1, hop=0).acquired

    _deliver(worker, _partition_message("1"))

    record = aws.dynamodb.get_item(TableName="LedgerTable", Key=partition_key(TOY_JOB, SCHEDULED, "1"))["Item"]
    assert record["status"] == {"S": "done"}


def test_a_worker_past_its_time_budget_hands_on_a_continuation(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORK_PAGE_SIZE", "2")
    monkeypatch.setenv("WORK_TIME_BUDGET_SECONDS", "30")
    seed(aws.dynamodb, 24)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())

    # 20 s left, less than the 30 s budget: one page per run, then a continuation
    drained = drain(aws.sqs, aws.work_queue, worker, context=Context(remaining_ms=20_000))

    assert drained.errors == []
    assert len(_outputs(aws)) == 24
    assert _summary(aws)["applied"] == 24
    hops = {
        record["scheduled_time"]["S"]: int(record["hops"]["N"])
        for record in _ledger_work_records(aws)
        if "hops" in record
    }
    assert len(hops) == 4
    # ~6 items per partition at 2 a page: about 3 pages, so as many runs (hop 0 first), and one
    # more when a page ends exactly at the partition's end
    assert all(1 <= hop <= 8 for hop in hops.values()), hops
    assert sum(hops.values()) >= 8
    assert len(drained.outcomes) == 4 + sum(hops.values())


def test_failed_items_go_to_the_dlq_fail_the_tick_and_replay_once_fixed(aws: Aws) -> None:
    due = seed(aws.dynamodb, 30, poison=3)
    _, work, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    drain(aws.sqs, aws.work_queue, worker)

    entry = _entry(aws)
    assert entry["status"] == {"S": "failed"}
    assert entry["error"]["S"] == "3 items failed: replay them after the fix: clockless work redrive toy-job"
    assert _summary(aws) == {"found": 30, "applied": 27, "already_done": 0, "failed": 3, "partitions": 4}
    listed = LedgerEntry.from_item(entry).failures
    assert sorted(f.key for f in listed) == due[:3]
    assert {(f.reason, f.attempts) for f in listed} == {("write", 1)}
    assert all(f.message.startswith("ValidationException: ") for f in listed)
    dead = bodies(aws.sqs, aws.dead_letter_queue)
    failed_items = sorted(item["item_id"] for message in dead for item in message["items"])
    assert failed_items == due[:3]
    assert all(message["kind"] == "items" and "ValidationException" in message["error"] for message in dead)

    # The job's code is fixed; the operator moves the DLQ's messages back (twice, by mistake).
    fixed_worker = work.worker(lambda: FixedWork(aws.dynamodb))
    for message in dead + dead:
        aws.sqs.send_message(QueueUrl=aws.work_queue, MessageBody=json.dumps(message))
    drained = drain(aws.sqs, aws.work_queue, fixed_worker)

    assert drained.errors == []
    assert len(_outputs(aws)) == 30
    entry = _entry(aws)
    assert entry["status"] == {"S": "succeeded"}
    assert "error" not in entry
    assert "failures" not in entry
    assert _summary(aws) == {"found": 30, "applied": 30, "already_done": 0, "failed": 0, "partitions": 4}


def test_a_malformed_message_fails_naming_the_field_and_writes_nothing(aws: Aws) -> None:
    _, _, _, worker = toy_job()
    body = json.loads(_partition_message("9"))

    with pytest.raises(BatchProcessingError) as raised:
        _deliver(worker, json.dumps(body))

    assert "field 'partition'" in str(raised.value.child_exceptions[0][1])
    assert _ledger_work_records(aws) == []


def test_a_watch_queued_by_the_release_before_is_acknowledged_with_a_log_line_and_writes_nothing(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    seed(aws.dynamodb, 4)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    watch = json.loads(_partition_message("0")) | {"kind": "watch", "watched": "run-5", "receives": 5}
    partition_messages = len(receive(aws.sqs, aws.work_queue))

    answer = _deliver(worker, json.dumps(watch))

    assert answer == {"batchItemFailures": []}  # processed: neither retried nor set aside in the work DLQ
    assert "work message of a retired kind acknowledged; nothing done" in caplog.messages
    assert _ledger_work_records(aws) == []
    assert _entry(aws)["status"] == {"S": "started"}
    assert len(receive(aws.sqs, aws.work_queue)) == partition_messages  # and it sent nothing


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "everything"}, "kind"),
        ({"job": "another-job"}, "job"),
        ({"scheduled_time": "2026-12-01T02:00:30Z"}, "scheduled_time"),
        ({"hop": -1}, "hop"),
        ({"params": []}, "params"),
        ({"trigger": "cron"}, "trigger"),
        ({"kind": "items", "items": []}, "items"),
        ({"kind": "items", "items": ["x"]}, "items[0]"),
    ],
)
def test_each_malformed_field_is_named(change: dict[str, Any], field: str) -> None:
    body = json.loads(_partition_message("1")) | change
    with pytest.raises(ValueError, match=rf"field '{field.replace('[', r'\[').replace(']', r'\]')}'"):
        WorkMessage.parse(json.dumps(body), job=TOY_JOB, partitions=["0", "1"])


def test_progress_shows_partitions_done_and_the_counters_so_far(aws: Aws) -> None:
    from clockless.fanout.finisher import Finisher

    seed(aws.dynamodb, 12)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    _deliver(worker, _partition_message("0"))

    progress = Finisher(aws.dynamodb, "LedgerTable").progress(TOY_JOB, SCHEDULED)

    assert (progress.partitions_done, progress.partitions_total, progress.status) == (1, 4, "started")
    assert not progress.complete
    assert progress.counters.applied == len(_outputs(aws)) > 0

    drain(aws.sqs, aws.work_queue, worker)
    done = Finisher(aws.dynamodb, "LedgerTable").progress(TOY_JOB, SCHEDULED)
    assert (done.complete, done.status, done.counters.applied) == (True, "succeeded", 12)
    assert int(_entry(aws)["duration_ms"]["N"]) >= 0


class _PausedAfterReading(ToyWork):
    """The toy whose second page is read, then held while `meanwhile` runs (another worker)."""

    def __init__(self, client: Any, meanwhile: Any) -> None:
        super().__init__(client)
        self.meanwhile = meanwhile
        self.pages = 0

    def read(self, partition: str, params: Any, cursor: Any, limit: int) -> Any:
        page = super().read(partition, params, cursor, limit)
        self.pages += 1
        if self.pages == 2:
            self.meanwhile()
        return page


def test_workers_whose_clocks_differ_by_seconds_never_apply_an_item_twice(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN worker A mid-partition, 6 s before its lease runs out by its own clock (a page applied,
    # the next one read and in hand), and worker B whose clock is 7 s ahead of A's: for B the
    # lease ran out a second ago, so it takes the partition over while A still holds it
    monkeypatch.setenv("WORK_PAGE_SIZE", "2")
    monkeypatch.setenv("WORK_TIME_BUDGET_SECONDS", "1")
    seed(aws.dynamodb, 8, partitions=1)
    job = ScheduledJob(TOY_JOB)
    work = FanOut(job, partitions=["0"])

    @job.handler
    def coordinator(run: JobRun) -> Mapping[str, Any]:
        return work.start(run, params={"until": BUSINESS_DATE})

    worker_b = work.worker(lambda: ToyWork(aws.dynamodb))
    answers: list[dict[str, Any]] = []
    start = datetime.now(UTC).replace(microsecond=0)
    with time_machine.travel(start, tick=False) as clock_a:

        def meanwhile() -> None:
            clock_a.shift(timedelta(seconds=54))
            with time_machine.travel(start + timedelta(seconds=61), tick=False):
                answers.append(_deliver(worker_b, _partition_message("0")))

        worker_a = work.worker(lambda: _PausedAfterReading(aws.dynamodb, meanwhile))
        coordinator(dict(TICK), Context())
        # WHEN A goes on with the page it read, after B took the partition over and finished it
        held = _deliver(worker_a, _partition_message("0"), Context(remaining_ms=60_000))
    # THEN B applied the rest once (6 items, from A's stored cursor), A's page in hand was already
    # done and A stopped at its cursor (its lease taken over): every item applied and counted once
    assert answers == [{"batchItemFailures": []}]
    assert held == {"batchItemFailures": []}
    assert len(_outputs(aws)) == 8
    summary = _summary(aws)
    assert (summary["applied"], summary["failed"]) == (8, 0)
    assert _entry(aws)["status"] == {"S": "succeeded"}
