"""Ticks that arrive late and out of order (docs/operating.md#overlap-a-tick-while-the-last-one-still-runs):
EventBridge Scheduler retries a tick for up to its MaximumEventAgeInSeconds and Lambda's
asynchronous retries add up to six hours, so tick T can arrive after T+1 has succeeded, or hours
late; operators replay old ticks too.

A day of hourly ticks of a fanned-out job (the kit's toy, in-process moto) is delivered twice on
the same items: in order, each on time; and shuffled, each hours late (its arrival its scheduled
time plus one to six hours, in the order of arrival), its work drained before the next arrives.
For every overlap policy, and for a job that works on the range since its last success
(`run.last_success`: catch-up) and one that applies what is due by the tick (point in time):

- the tables equal the in-order day's item by item (which tick wrote an item aside: a later tick
  covers an earlier one's range, so the writer differs, not the write);
- every item is applied once: the day's `applied` counts add up to the in-order day's;
- every tick ends `succeeded`, none held back (nothing was running when it arrived), and each
  records what it did (a late tick whose range a newer tick covered finds it done): its last
  success is the latest success scheduled before it, never a newer one, so it neither re-runs nor
  skips what a newer tick covered.

One case (buffer, catch-up) in `make test`; the sweep over the seeds and the rest in CI (`slow`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import boto3
import pytest
import time_machine

from clockless.dynamo import shard_for
from clockless.fanout import FanOut, Page
from clockless.fanout.keys import tick_key
from clockless.job import ScheduledJob
from clockless.run import JobRun
from clockless.tick import format_scheduled_time
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import ITEMS_TABLE, OUTPUTS_TABLE, PARTITIONS, TOY_JOB, Context, ToyWork, drain
from tests.unit.kit.toy import create_tables as create_toy_tables

DAY: Final = datetime(2026, 12, 1, tzinfo=UTC)
ITEMS: Final = 48
CATCH_UP: Final = "catch-up"
POINT_IN_TIME: Final = "point in time"
# Which tick wrote an item: the only attribute a late, covering tick changes.
PROVENANCE: Final = ("done_for", "tick")


class CatchUpWork(ToyWork):
    """The toy over the range (since, until]: items due since the last success, up to the tick."""

    def read(self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int) -> Any:
        since = params.get("since")
        if since is None:
            return super().read(partition, params, cursor, limit)
        request: dict[str, Any] = {
            "TableName": ITEMS_TABLE,
            "IndexName": "due-by-shard",
            "KeyConditionExpression": "#shard = :shard AND due BETWEEN :since AND :until",
            "ExpressionAttributeNames": {"#shard": "shard"},
            "ExpressionAttributeValues": {
                ":shard": {"S": partition},
                # BETWEEN is inclusive; a second past the last success keeps the range half-open.
                ":since": {"S": str(since)},
                ":until": {"S": str(params["until"])},
            },
            "Limit": limit,
        }
        if cursor is not None:
            request["ExclusiveStartKey"] = dict(cursor)
        response = self.client.query(**request)
        return Page(list(response.get("Items") or []), response.get("LastEvaluatedKey"))


def late_job(overlap: str, semantics: str) -> tuple[Any, Any]:
    job = ScheduledJob(TOY_JOB, overlap=overlap)
    work = FanOut(job, partitions=PARTITIONS)

    @job.handler
    def coordinator(run: JobRun) -> Mapping[str, Any]:
        until = format_scheduled_time(run.tick.scheduled_time)
        if semantics == POINT_IN_TIME:
            return work.start(run, params={"until": until})
        last = run.last_success
        since = None if last is None else format_scheduled_time(last + timedelta(seconds=1))
        return work.start(run, params={"since": since, "until": until})

    worker = work.worker(lambda: CatchUpWork(boto3.client("dynamodb")))
    return coordinator, worker


def seed_day(client: Any) -> None:
    """Items due across the day (and one due before it), two an hour."""
    requests = []
    for index in range(ITEMS):
        item_id = f"item-{index:05d}"
        due = format_scheduled_time(DAY + timedelta(minutes=30 * index - 1))
        item = {
            "item_id": {"S": item_id},
            "shard": {"S": shard_for(item_id, len(PARTITIONS))},
            "due": {"S": due},
            "value": {"S": str(index)},
        }
        requests.append({"PutRequest": {"Item": item}})
    for start in range(0, len(requests), 25):
        client.batch_write_item(RequestItems={ITEMS_TABLE: requests[start : start + 25]})


def fresh(aws: Aws) -> None:
    for table in aws.dynamodb.list_tables()["TableNames"]:
        aws.dynamodb.delete_table(TableName=table)
    create_toy_tables(aws.dynamodb)
    seed_day(aws.dynamodb)


def tick_event(when: datetime) -> dict[str, str]:
    return {"job": TOY_JOB, "scheduled_time": format_scheduled_time(when), "attempt": "1", "trigger": "schedule"}


def deliver_day(aws: Aws, overlap: str, semantics: str, arrivals: list[tuple[datetime, datetime]]) -> dict[str, Any]:
    """Each (scheduled time, arrival) in order of arrival, its work drained before the next."""
    fresh(aws)
    coordinator, worker = late_job(overlap, semantics)
    outcomes = {}
    for scheduled, arrival in sorted(arrivals, key=lambda pair: pair[1]):
        with time_machine.travel(arrival, tick=False):
            outcomes[scheduled] = coordinator(tick_event(scheduled), Context())["outcome"]
            drained = drain(aws.sqs, aws.work_queue, worker)
            assert drained.errors == [], drained.errors
    entries = {when: _entry(aws, when) for when, _ in arrivals}
    tables = {
        table: sorted(
            (
                {k: v for k, v in item.items() if k not in PROVENANCE}
                for item in aws.dynamodb.scan(TableName=table)["Items"]
            ),
            key=repr,
        )
        for table in (ITEMS_TABLE, OUTPUTS_TABLE)
    }
    return {"outcomes": outcomes, "entries": entries, "tables": tables}


def _entry(aws: Aws, when: datetime) -> dict[str, Any]:
    key = tick_key(TOY_JOB, format_scheduled_time(when))
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=key, ConsistentRead=True).get("Item") or {}
    return {name: next(iter(value.values())) for name, value in item.items()}


def shuffled_and_late(ticks: list[datetime], seed: int) -> list[tuple[datetime, datetime]]:
    rng = random.Random(seed)
    return [(when, when + timedelta(minutes=rng.randint(60, 360))) for when in ticks]


# `make test`: the first hours of the day, buffer and catch-up (each tick costs five deliveries);
# CI: the whole day for every policy and both kinds of job.
CASES: Final = [
    pytest.param("buffer", CATCH_UP, 5, id=f"buffer-{CATCH_UP}-5 hours"),
    *(
        pytest.param(overlap, semantics, 24, marks=pytest.mark.slow, id=f"{overlap}-{semantics}-a day")
        for overlap in ("run-both", "skip", "buffer")
        for semantics in (CATCH_UP, POINT_IN_TIME)
    ),
]


@pytest.mark.parametrize(("overlap", "semantics", "hours"), CASES)
def test_a_day_of_ticks_shuffled_and_hours_late_leaves_the_tables_of_the_day_in_order(
    aws: Aws, overlap: str, semantics: str, hours: int
) -> None:
    ticks = [DAY + timedelta(hours=hour) for hour in range(1, hours + 1)]
    in_order = deliver_day(aws, overlap, semantics, [(when, when + timedelta(seconds=20)) for when in ticks])
    late = deliver_day(aws, overlap, semantics, shuffled_and_late(ticks, seed=hours))
    assert [when for when, _ in sorted(shuffled_and_late(ticks, seed=hours), key=lambda p: p[1])] != ticks

    assert late["tables"] == in_order["tables"]
    assert set(late["outcomes"].values()) == {"executed"}
    for when, entry in late["entries"].items():
        assert entry["status"] == "succeeded", (when, entry)
        assert "reason" not in entry, (when, entry)

    def applied(day: dict[str, Any]) -> int:
        return sum(json.loads(entry["summary"])["applied"] for entry in day["entries"].values())

    assert (
        applied(late)
        == applied(in_order)
        == sum(1 for index in range(ITEMS) if DAY + timedelta(minutes=30 * index - 1) <= ticks[-1])
    )
