"""A work message is trusted only as far as the ledger and the clock confirm it: a message for a
tick nobody claimed, for partitions the tick did not fan out, for a tick in the future, a
continuation of a partition never started, or replayed items that never failed, is refused
naming why and changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
import time_machine
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from tests.unit.kit.conftest import Aws
from tests.unit.kit.test_worker import SCHEDULED, TICK, _deliver, _entry, _ledger_work_records, _partition_message
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    ITEMS_TABLE,
    OUTPUTS_TABLE,
    TOY_JOB,
    Context,
    drain,
    seed,
    sqs_event,
    toy_job,
)


def _items(aws: Aws) -> list[dict[str, Any]]:
    return sorted(aws.dynamodb.scan(TableName=ITEMS_TABLE)["Items"], key=repr)


def _refused(worker: Any, body: str, caplog: pytest.LogCaptureFixture) -> str:
    """Deliver `body`; it must fail, and the worker must log why: that reason."""
    with pytest.raises(BatchProcessingError) as raised:
        _deliver(worker, body)
    refusals = [r for r in caplog.records if r.getMessage() == "work message refused; nothing was written"]
    assert refusals, "no error logged for the refused message"
    assert refusals[-1].levelname == "ERROR"
    reason = str(getattr(refusals[-1], "reason", ""))
    assert reason in str(raised.value.child_exceptions[0][1])
    return reason


def test_a_message_for_a_tick_nobody_claimed_changes_nothing(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    seed(aws.dynamodb, 12)
    _, _, _, worker = toy_job()
    before = _items(aws)

    reason = _refused(worker, _partition_message("1"), caplog)

    assert reason == "the ledger has no entry for this tick: no coordinator claimed it"
    assert _items(aws) == before
    assert aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"] == []
    assert aws.dynamodb.scan(TableName="LedgerTable")["Items"] == []


def test_a_partition_beyond_a_tick_fanned_out_into_fewer_changes_nothing(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    # A worker deployed with a raised shard count (4) runs the 2-partition tick of a coordinator
    # deployed before it with the tick's own count: a partition beyond it is no message of the tick.
    seed(aws.dynamodb, 12)
    _, _, coordinator, _ = toy_job(partitions=2)
    coordinator(dict(TICK), Context())
    _, _, _, worker_of_four = toy_job()

    reason = _refused(worker_of_four, _partition_message("3"), caplog)

    assert reason == "the tick was fanned out into 2 partitions, which do not include this one (number 4)"
    assert _ledger_work_records(aws) == []
    assert aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"] == []


def test_a_tick_fanned_out_into_more_partitions_than_the_worker_runs_changes_nothing(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    # A shard count lowered (4 to 2) while a tick of the old count is in flight, without the migration.
    seed(aws.dynamodb, 12)
    _, _, coordinator, _ = toy_job()
    coordinator(dict(TICK), Context())
    _, _, _, worker_of_two = toy_job(partitions=2)

    reason = _refused(worker_of_two, _partition_message("1"), caplog)

    assert reason.startswith("the tick was fanned out into 4 partitions, more than the 2 this worker runs")
    assert "docs/fan-out.md#changing-a-jobs-shard-count" in reason
    assert _ledger_work_records(aws) == []
    assert aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"] == []


def test_a_message_for_a_tick_one_day_ahead_changes_nothing(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    seed(aws.dynamodb, 12)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    ahead = json.loads(_partition_message("1")) | {"scheduled_time": "2026-12-02T02:00:00Z"}

    with time_machine.travel(f"{BUSINESS_DATE}T02:00:30Z", tick=False):
        reason = _refused(worker, json.dumps(ahead), caplog)

    assert "is 24.0 h in the future" in reason
    assert "clock-skew allowance 5 s" in reason
    assert _ledger_work_records(aws) == []
    assert aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"] == []


def test_a_continuation_of_a_partition_never_started_changes_nothing(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    seed(aws.dynamodb, 12)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())

    reason = _refused(worker, _partition_message("1", hop=3), caplog)

    assert reason == "a continuation (hop 3) of a partition never started"
    assert _ledger_work_records(aws) == []


def test_replayed_items_that_never_failed_change_nothing(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    seed(aws.dynamodb, 12, poison=1)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    drain(aws.sqs, aws.work_queue, worker)
    records = _ledger_work_records(aws)
    entry = _entry(aws)
    failed_partition = next(r for r in records if "failed_items" in r)["scheduled_time"]["S"].split("#p")[1]
    # An item that applied, dressed as a failed one of the partition that does have a failed item
    replay = {
        "kind": "items",
        "job": TOY_JOB,
        "scheduled_time": SCHEDULED,
        "trigger": "schedule",
        "partition": failed_partition,
        "params": {"until": BUSINESS_DATE},
        "items": [{"item_id": "item-00011", "due": BUSINESS_DATE, "value": "11"}],
        "error": "forged",
    }

    reason = _refused(worker, json.dumps(replay), caplog)

    assert reason == "replayed items that never failed in it: item-00011"
    assert _ledger_work_records(aws) == records
    assert _entry(aws) == entry


def test_a_shard_count_raised_while_a_tick_is_in_flight_applies_every_item_once(aws: Aws) -> None:
    # The coordinator ran the old code (2 shards), its workers the new (4): the tick keeps its count.
    ids = seed(aws.dynamodb, 12, partitions=2)
    _, _, coordinator, _ = toy_job(partitions=2)
    coordinator(dict(TICK), Context())
    _, _, _, worker_of_four = toy_job()

    drained = drain(aws.sqs, aws.work_queue, worker_of_four)

    assert drained.errors == []
    outputs = aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"]
    assert sorted(item["item_id"]["S"] for item in outputs) == ids
    entry = _entry(aws)
    assert entry["status"]["S"] == "succeeded"
    assert json.loads(entry["summary"]["S"])["applied"] == len(ids)


def test_a_message_of_a_newer_version_fails_by_name_and_settles_its_tick_on_its_last_receive(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    seed(aws.dynamodb, 12)
    _, _, coordinator, worker = toy_job()
    coordinator(dict(TICK), Context())
    newer = json.dumps(json.loads(_partition_message("1")) | {"version": 2})
    runner = worker.clockless_runner

    for receives in range(1, runner.settings().max_receives + 1):
        message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": newer}
        event = sqs_event([message | {"Attributes": {"ApproximateReceiveCount": str(receives)}}])
        with pytest.raises(BatchProcessingError):
            worker(event, Context())

    lines = [r for r in caplog.records if r.getMessage() == "work message unreadable; nothing was written"]
    assert len(lines) == runner.settings().max_receives
    assert all(r.levelname == "ERROR" for r in lines)
    assert "field 'version' is 2" in str(getattr(lines[-1], "reason", ""))
    assert "1" in _entry(aws)["partitions_exhausted"]["SS"]
    assert aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"] == []


def _every_receive(worker: Any, body: str) -> None:
    for receives in range(1, worker.clockless_runner.settings().max_receives + 1):
        message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": body}
        event = sqs_event([message | {"Attributes": {"ApproximateReceiveCount": str(receives)}}])
        with pytest.raises(BatchProcessingError):
            worker(event, Context())


def test_a_partition_beyond_a_lowered_count_is_named_exhausted_on_its_last_receive(
    aws: Aws,
) -> None:
    # The coordinator fanned out 4 partitions (the old count); every worker runs the lowered 2.
    seed(aws.dynamodb, 12)
    _, _, coordinator, _ = toy_job()
    coordinator(dict(TICK), Context())
    _, _, _, worker_of_two = toy_job(partitions=2)

    for partition in ("2", "3"):
        _every_receive(worker_of_two, _partition_message(partition))

    assert set(_entry(aws)["partitions_exhausted"]["SS"]) == {"2", "3"}
    assert aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"] == []


def test_every_partition_of_a_tick_fanned_out_into_more_than_the_worker_runs_is_named_and_it_settles_failed(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    # The coordinator fanned out 4 partitions (the old count); every worker runs the lowered 2:
    # partitions 0 and 1 are refused (untrusted), 2 and 3 unreadable; none may leave it `started`.
    seed(aws.dynamodb, 12)
    _, _, coordinator, _ = toy_job()
    coordinator(dict(TICK), Context())
    _, _, _, worker_of_two = toy_job(partitions=2)

    for partition in ("0", "1", "2", "3"):
        _every_receive(worker_of_two, _partition_message(partition))

    entry = _entry(aws)
    assert set(entry["partitions_exhausted"]["SS"]) == {"0", "1", "2", "3"}
    assert entry["status"]["S"] == "failed"
    refusals = [r for r in caplog.records if r.getMessage() == "work message refused; nothing was written"]
    assert len(refusals) == 2 * worker_of_two.clockless_runner.settings().max_receives
    assert aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"] == []


def test_a_refused_partition_is_named_only_on_its_last_receive(aws: Aws) -> None:
    seed(aws.dynamodb, 12)
    _, _, coordinator, _ = toy_job()
    coordinator(dict(TICK), Context())
    _, _, _, worker_of_two = toy_job(partitions=2)
    entry = _entry(aws)
    last = worker_of_two.clockless_runner.settings().max_receives

    for receives in range(1, last):
        message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": _partition_message("0")}
        event = sqs_event([message | {"Attributes": {"ApproximateReceiveCount": str(receives)}}])
        with pytest.raises(BatchProcessingError):
            worker_of_two(event, Context())

    assert _entry(aws) == entry


def test_a_partition_of_a_tick_nobody_claimed_is_not_named_on_its_last_receive(aws: Aws) -> None:
    # A forged message (no coordinator claimed the tick) is refused every receive and names nothing.
    seed(aws.dynamodb, 12)
    _, _, _, worker = toy_job()

    _every_receive(worker, _partition_message("0"))

    assert aws.dynamodb.scan(TableName="LedgerTable")["Items"] == []


def test_a_partition_beyond_the_count_of_a_tick_that_has_none_names_nothing(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    seed(aws.dynamodb, 12)
    _, _, coordinator, worker_of_two = toy_job(partitions=2)
    coordinator(dict(TICK), Context())
    entry = _entry(aws)

    _every_receive(worker_of_two, _partition_message("3"))

    assert _entry(aws) == entry
    assert any(r.getMessage() == "unreadable message names no partition of its tick" for r in caplog.records)
