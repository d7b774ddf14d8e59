"""Overlap, declared: a tick arriving while an earlier one of its job still runs runs beside it
(`run-both`), is recorded skipped (`skip`), or is recorded buffered and started by the earlier
tick's finisher (`buffer`, one at most; a further one is skipped)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout.keys import tick_key
from clockless.job import ScheduledJob
from tests.unit.kit.conftest import Aws
from tests.unit.kit.test_worker import _deliver
from tests.unit.kit.toy import BUSINESS_DATE, OUTPUTS_TABLE, TOY_JOB, Context, bodies, drain, seed, toy_job

FIRST = f"{BUSINESS_DATE}T02:00:00Z"
SECOND = f"{BUSINESS_DATE}T03:00:00Z"
THIRD = f"{BUSINESS_DATE}T04:00:00Z"


def _tick(scheduled_time: str) -> dict[str, str]:
    return {"job": TOY_JOB, "scheduled_time": scheduled_time, "attempt": "1", "trigger": "schedule"}


def _entry(aws: Aws, scheduled_time: str) -> dict[str, Any]:
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, scheduled_time), ConsistentRead=True)
    return {name: next(iter(value.values())) for name, value in (item.get("Item") or {}).items()}


def _partition_ticks(aws: Aws) -> list[str]:
    return sorted({body["scheduled_time"] for body in bodies(aws.sqs, aws.work_queue) if body["kind"] == "partition"})


def test_run_both_runs_the_second_tick_beside_the_first(aws: Aws) -> None:
    seed(aws.dynamodb, 8)
    _, _, coordinator, _ = toy_job()
    coordinator(_tick(FIRST), Context())

    second = coordinator(_tick(SECOND), Context())

    assert second["outcome"] == "executed"
    assert _partition_ticks(aws) == [FIRST, SECOND]


def test_skip_records_the_second_tick_skipped_naming_the_first(aws: Aws) -> None:
    seed(aws.dynamodb, 8)
    _, _, coordinator, worker = toy_job(overlap="skip")
    coordinator(_tick(FIRST), Context())

    second = coordinator(_tick(SECOND), Context())
    again = coordinator(_tick(SECOND) | {"attempt": "2"}, Context())

    reason = f"overlap: {FIRST} still running"
    assert second == {
        "job": TOY_JOB,
        "scheduled_time": SECOND,
        "outcome": "skipped",
        "reason": reason,
        "overlap_with": FIRST,
    }
    assert again == second
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["reason"], entry["overlap_with"], entry["attempts"]) == (
        "skipped",
        reason,
        FIRST,
        "0",
    )
    assert _partition_ticks(aws) == [FIRST]
    # The first tick done, the next one runs.
    drain(aws.sqs, aws.work_queue, worker)
    assert _entry(aws, FIRST)["status"] == "succeeded"
    assert coordinator(_tick(THIRD), Context())["outcome"] == "executed"


def test_an_earlier_tick_started_too_long_ago_holds_nothing_back(aws: Aws) -> None:
    seed(aws.dynamodb, 8)
    _, _, coordinator, _ = toy_job(overlap="skip")
    coordinator(_tick(FIRST), Context())

    # 6 h after it started, a tick still `started` is dead (its alarms speak for it), not running
    with time_machine.travel(datetime.now(UTC) + timedelta(hours=6, minutes=1)):
        second = coordinator(_tick(SECOND), Context())

    assert second["outcome"] == "executed"


def test_buffer_holds_one_tick_starts_it_when_the_first_finishes_and_skips_the_next(aws: Aws) -> None:
    seed(aws.dynamodb, 8)
    _, _, coordinator, worker = toy_job(overlap="buffer")
    coordinator(_tick(FIRST), Context())

    second = coordinator(_tick(SECOND), Context())
    third = coordinator(_tick(THIRD), Context())

    assert (second["outcome"], second["reason"]) == (
        "buffered",
        f"overlap: {FIRST} still running; starts when it finishes",
    )
    assert (third["outcome"], third["reason"]) == ("skipped", f"overlap: {SECOND} already buffered")
    assert _entry(aws, SECOND)["status"] == "buffered"
    assert _partition_ticks(aws) == [FIRST]

    drained = drain(aws.sqs, aws.work_queue, worker)

    assert drained.errors == []
    first, started = _entry(aws, FIRST), _entry(aws, SECOND)
    assert first["status"] == "succeeded"
    # The buffered tick was started by the first one's finisher, fanned out and finished.
    assert (started["status"], started["released_by"], started["partitions_done"]) == ("succeeded", FIRST, "4")
    assert json.loads(started["summary"])["found"] == 0  # the first tick had done every item
    assert json.loads(first["summary"])["applied"] == 8
    assert len(aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"]) == 8
    assert _entry(aws, THIRD)["status"] == "skipped"


def test_a_start_message_for_a_tick_not_buffered_changes_nothing(aws: Aws) -> None:
    seed(aws.dynamodb, 8)
    _, _, coordinator, worker = toy_job(overlap="buffer")
    coordinator(_tick(FIRST), Context())
    forged = {"kind": "start", "job": TOY_JOB, "scheduled_time": SECOND, "partition": "", "params": {"after": FIRST}}

    with pytest.raises(BatchProcessingError, match="All records failed") as raised:
        _deliver(worker, json.dumps(forged))

    assert f"not a tick buffered behind {FIRST}" in str(raised.value.child_exceptions[0][1])
    assert _entry(aws, SECOND) == {}
    assert _partition_ticks(aws) == [FIRST]


@pytest.mark.parametrize("overlap", ["skip-it", "", "RUN-BOTH", None])
def test_an_unknown_overlap_policy_is_refused_naming_the_allowed_ones(overlap: Any) -> None:
    with pytest.raises(ValueError, match="overlap must be one of 'run-both', 'skip', 'buffer'"):
        ScheduledJob("any-job", overlap=overlap)


def test_a_skipped_tick_delivered_again_after_the_first_finished_stays_skipped(aws: Aws) -> None:
    # GIVEN a tick skipped behind the first, and the first then finished
    seed(aws.dynamodb, 8)
    _, _, coordinator, worker = toy_job(overlap="skip")
    coordinator(_tick(FIRST), Context())
    skipped = coordinator(_tick(SECOND), Context())
    drain(aws.sqs, aws.work_queue, worker)

    # WHEN the scheduler delivers the skipped tick again (a late retry, a redelivery)
    again = coordinator(_tick(SECOND) | {"attempt": "2"}, Context())

    # THEN it is answered as skipped, and nothing of it runs
    assert again == skipped
    assert _entry(aws, SECOND)["status"] == "skipped"
    assert _partition_ticks(aws) == []


def test_a_buffered_tick_delivered_again_after_its_start_is_not_started_twice(aws: Aws) -> None:
    # GIVEN a buffered tick started by the first tick's finisher, and finished
    seed(aws.dynamodb, 8)
    _, _, coordinator, worker = toy_job(overlap="buffer")
    coordinator(_tick(FIRST), Context())
    coordinator(_tick(SECOND), Context())
    drain(aws.sqs, aws.work_queue, worker)

    # WHEN the scheduler's retry of it arrives late
    again = coordinator(_tick(SECOND) | {"attempt": "2"}, Context())

    # THEN it answers as buffered behind the first, sends no partition and leaves the entry succeeded
    assert (again["outcome"], again["overlap_with"]) == ("buffered", FIRST)
    assert _partition_ticks(aws) == []
    entry = _entry(aws, SECOND)
    assert (entry["status"], entry["attempts"]) == ("succeeded", "1")


def test_buffer_judges_a_late_tick_by_its_scheduled_time_and_leaves_no_tick_buffered_for_ever(aws: Aws) -> None:
    # GIVEN the first tick running, and the third (on time) buffered behind it
    seed(aws.dynamodb, 8)
    _, _, coordinator, worker = toy_job(overlap="buffer")
    coordinator(_tick(FIRST), Context())
    third = coordinator(_tick(THIRD), Context())
    assert (third["outcome"], third["overlap_with"]) == ("buffered", FIRST)

    # WHEN the second tick arrives late, while the first still runs
    second = coordinator(_tick(SECOND), Context())

    # THEN one tick is buffered behind the first, as for ticks in order: the late one is skipped,
    # naming the tick buffered after it
    assert (second["outcome"], second["reason"]) == ("skipped", f"overlap: {THIRD} already buffered")
    drained = drain(aws.sqs, aws.work_queue, worker)
    assert drained.errors == []
    statuses = {when: _entry(aws, when)["status"] for when in (FIRST, SECOND, THIRD)}
    assert statuses == {FIRST: "succeeded", SECOND: "skipped", THIRD: "succeeded"}
    assert len(aws.dynamodb.scan(TableName=OUTPUTS_TABLE)["Items"]) == 8
