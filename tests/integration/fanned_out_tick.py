"""A fanned-out tick of the toy job on the embedded server, driven as Lambda and SQS drive it
(the coordinator with Lambda's asynchronous retries, the work queue drained as the poller does,
a failed message shown again after the visibility timeout, a delayed one when its delay is up),
with the fault injector installed and simulated time (time-machine). Shared by the fan-out
fault-model and throttling tests."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
import time_machine

from clockless.fanout.keys import partition_key, tick_key
from clockless_tools.simulate.faults import AttemptDied, FaultInjector, FaultKind, RequestRecord
from tests.moto_backends import FreshBackends
from tests.unit.kit.toy import (
    BUSINESS_DATE,
    ITEMS_TABLE,
    OUTPUTS_TABLE,
    TOY_JOB,
    Context,
    ServedToy,
    create_tables,
    seed,
    served_toy,
    sqs_event,
    toy_job,
)

SCHEDULED: Final = f"{BUSINESS_DATE}T02:00:00Z"
TICK: Final = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}
# One partition of 5 items in pages of 3: two pages, so the run stores a cursor, and the run
# also finishes the tick (lease, 2 Query, 2 item transactions, a cursor, done, the finisher's
# GetItem, Query and UpdateItem). Several partitions are the unit tests' (tests/unit/kit/).
ITEMS: Final = 5
PARTITIONS: Final = 1
# Items in the index whose output exists already: every run that reads them finds them done.
ALREADY_DONE: Final = 1
# A duplicate TickSucceeded is harmless to the dead-man alarm; what a death can cost at most.
MAX_SUCCESS_METRICS: Final = 2
# The ledger's summary of the tick once every item is applied.
CLEAN_SUMMARY: Final = {
    "found": ITEMS + ALREADY_DONE,
    "applied": ITEMS,
    "already_done": ALREADY_DONE,
    "failed": 0,
    "partitions": PARTITIONS,
}
# The work queue's visibility timeout: 6 x the worker's 300 s timeout, as the template sets it.
VISIBILITY: Final = timedelta(minutes=30)
LAMBDA_RETRY_DELAYS: Final = (timedelta(minutes=1), timedelta(minutes=2))
COORDINATOR_TIMEOUT: Final = timedelta(seconds=120)
# A delayed message (DelaySeconds: at most 900) is waited for in steps of simulated time.
DELAY_STEP: Final = timedelta(seconds=1)
DELAY_STEPS: Final = 900
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
TABLES: Final = (ITEMS_TABLE, OUTPUTS_TABLE, "LedgerTable", "IdempotencyTable")
# The toy's tables just seeded, by how many items are poisoned (the rest of the seed is the module's).
_seeded: dict[int, FreshBackends] = {}


@dataclass
class Delivery:
    partition: str
    kind: str
    ended: str
    requests: list[RequestRecord] = field(default_factory=list)
    hop: int = 0


@dataclass(frozen=True)
class Aim:
    """The fault under test: the first delivery of `partition`'s message meets `kind` at `request`
    (and `then` at later requests of the same delivery)."""

    partition: str
    request: int
    kind: FaultKind
    then: dict[int, FaultKind] = field(default_factory=dict)
    # the message of that partition aimed at: its first run (0) or a continuation
    hop: int = 0


class FannedOutTick:
    def __init__(
        self, toy: ServedToy, faults: FaultInjector, clock: time_machine.Traveller, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.toy = toy
        self.faults = faults
        self.clock = clock
        self.capsys = capsys
        self.job, self.work, self.coordinator, self.worker = toy_job(lambda: toy.dynamodb, partitions=PARTITIONS)
        # What each worker attempt has left of its timeout (below WORK_TIME_BUDGET_SECONDS, 30 s:
        # every run does one page and hands on a continuation).
        self.remaining_ms = 300_000
        # What the queue cost the tick: messages shown again only after the visibility timeout,
        # and seconds waited for delayed messages (continuations sent with DelaySeconds).
        self.stalls = 0
        self.delayed_s = 0

    def reset(self, *, poison: int = 0) -> None:
        # An hour later: the same tick on the same data sends the same transactions, and DynamoDB
        # (the injector) would answer them from their tokens for 10 minutes without applying them.
        self.clock.shift(timedelta(hours=1))
        self.drain_queues()
        # Seeded through the wire once per `poison`, then the tables as they were then, copied
        # back into moto's backend without a request (tests/moto_backends.py).
        if (seeded := _seeded.get(poison)) is not None:
            seeded.install()
        else:
            for table in TABLES:
                self.toy.dynamodb.delete_table(TableName=table)
            create_tables(self.toy.dynamodb)
            seed(self.toy.dynamodb, ITEMS, not_due=2, partitions=PARTITIONS, poison=poison, already_done=ALREADY_DONE)
            _seeded[poison] = FreshBackends.of(TABLES)
        self.capsys.readouterr()  # the metrics printed from here on are this run's

    def drain_queues(self) -> None:
        for queue in (self.toy.work_queue, self.toy.dead_letter_queue):
            # (PurgeQueue: once a minute at most)
            while messages := self.toy.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
                for message in messages:
                    self.toy.sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])

    def start(self, aim: Aim | None = None) -> list[Delivery]:
        """The tick delivered to the coordinator, and Lambda's asynchronous retries of it (same
        request id; after 1 then 2 minutes, or a minute after a timeout) until one succeeds."""
        request_id = str(uuid.uuid4())
        attempts: list[Delivery] = []
        for attempt in range(1 + len(LAMBDA_RETRY_DELAYS)):
            if aim is not None and attempt == 0:
                self.faults.arm(aim.request, aim.kind, count_spared=True, then=aim.then)
            else:
                self.faults.watch()
            try:
                result = self.coordinator(dict(TICK), Context(aws_request_id=request_id))
                ended = str(result["outcome"])
            except AttemptDied:
                ended = "died"
                self.clock.shift(COORDINATOR_TIMEOUT)
            except Exception:
                ended = "raised"
            finally:
                requests = self.faults.requests()
                self.faults.disarm()
            attempts.append(Delivery("coordinator", "tick", ended, requests))
            if ended in ("executed", "duplicate"):
                return attempts
            self.clock.shift(LAMBDA_RETRY_DELAYS[min(attempt, len(LAMBDA_RETRY_DELAYS) - 1)])
        raise AssertionError(f"no coordinator attempt succeeded: {[a.ended for a in attempts]}")

    def run(self, aim: Aim | None = None, *, copies: int = 1, coordinator: Aim | None = None) -> list[Delivery]:
        """The coordinator, then Lambda's SQS poller until the queue is empty."""
        self.start(coordinator)
        return self.drain(aim, copies=copies)

    def drain(self, aim: Aim | None = None, *, copies: int = 1, limit: int = 100) -> list[Delivery]:
        """Lambda's poller until the queue is empty (or `limit` deliveries)."""
        deliveries: list[Delivery] = []
        aimed = False
        for _ in range(limit):
            if len(deliveries) >= limit:
                return deliveries
            received = self.toy.sqs.receive_message(
                QueueUrl=self.toy.work_queue,
                MaxNumberOfMessages=1,
                VisibilityTimeout=int(VISIBILITY.total_seconds()),
                AttributeNames=["ApproximateReceiveCount"],
            ).get("Messages")
            if not received and self._wait_for_delayed():
                continue
            if not received:
                return deliveries
            message = received[0]
            body = json.loads(message["Body"])
            target = (
                aim is not None and not aimed and body["partition"] == aim.partition and body.get("hop", 0) == aim.hop
            )
            if copies > 1:
                ended = self._deliver_copies(message, copies, deliveries, body)
            else:
                ended = self._deliver(message, deliveries, body, aim if target else None)
                aimed = aimed or target
            if ended == "ok":
                self.toy.sqs.delete_message(QueueUrl=self.toy.work_queue, ReceiptHandle=message["ReceiptHandle"])
            else:
                # Shown again after its visibility timeout (reported failed: at once, but the
                # frozen clock must move for SQS to show it).
                self.toy.sqs.change_message_visibility(
                    QueueUrl=self.toy.work_queue, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
                self.clock.shift(VISIBILITY)
                self.stalls += 1
        if limit < 100:
            return deliveries
        raise AssertionError(f"the work queue did not drain: {[(d.partition, d.ended) for d in deliveries]}")

    def _wait_for_delayed(self) -> bool:
        """Move simulated time on until a delayed message shows (False: none is delayed)."""
        for _ in range(DELAY_STEPS):
            delayed = self.toy.sqs.get_queue_attributes(
                QueueUrl=self.toy.work_queue, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
            )["Attributes"]
            if not int(delayed["ApproximateNumberOfMessagesDelayed"]):
                return False
            self.clock.shift(DELAY_STEP)
            self.delayed_s += int(DELAY_STEP.total_seconds())
            visible = self.toy.sqs.get_queue_attributes(
                QueueUrl=self.toy.work_queue, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]
            if int(visible["ApproximateNumberOfMessages"]):
                return True
        raise AssertionError("a delayed message stayed delayed past SQS's 15 minutes")

    def _deliver(
        self, message: dict[str, Any], deliveries: list[Delivery], body: dict[str, Any], aim: Aim | None
    ) -> str:
        if aim is None:
            self.faults.watch()
        else:
            self.faults.arm(aim.request, aim.kind, count_spared=True, then=aim.then)
        try:
            response = self.worker(sqs_event([message]), Context(remaining_ms=self.remaining_ms))
            ended = "reported failed" if response["batchItemFailures"] else "ok"
        except AttemptDied:
            ended = "died"
        except Exception:
            ended = "raised"
        finally:
            requests = self.faults.requests()
            self.faults.disarm()
        deliveries.append(Delivery(body["partition"], body["kind"], ended, requests, body.get("hop", 0)))
        return ended

    def _deliver_copies(
        self, message: dict[str, Any], copies: int, deliveries: list[Delivery], body: dict[str, Any]
    ) -> str:
        """The same message handed to `copies` workers at once, as SQS may."""
        ended: list[str] = []

        def one() -> None:
            try:
                response = self.worker(sqs_event([message]), Context(remaining_ms=self.remaining_ms))
                ended.append("reported failed" if response["batchItemFailures"] else "ok")
            except Exception:
                ended.append("raised")

        threads = [threading.Thread(target=one) for _ in range(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        deliveries.extend(Delivery(body["partition"], body["kind"], e) for e in ended)
        return "ok" if "ok" in ended else "raised"

    def state(self) -> dict[str, Any]:
        tables = {
            table: sorted(
                (
                    item
                    for page in self.toy.dynamodb.get_paginator("scan").paginate(TableName=table)
                    for item in page["Items"]
                ),
                key=repr,
            )
            for table in (ITEMS_TABLE, OUTPUTS_TABLE)
        }
        entry = self.toy.dynamodb.get_item(
            TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED), ConsistentRead=True
        )
        item = entry.get("Item") or {}
        printed = self.capsys.readouterr().out
        return {
            "TickSucceeded": printed.count('"TickSucceeded":[1.0]'),
            "tables": tables,
            "status": item.get("status", {}).get("S"),
            "partitions": (item.get("partitions_done", {}).get("N"), item.get("partitions_total", {}).get("N")),
            "summary": json.loads(item["summary"]["S"]) if "summary" in item else None,
            "left in the work queue": self._count(self.toy.work_queue),
            "left in the work DLQ": self._count(self.toy.dead_letter_queue),
        }

    def partition_record(self, partition: str) -> dict[str, Any]:
        """The partition's record as the worker left it (docs/fan-out.md, "The records")."""
        item = self.toy.dynamodb.get_item(
            TableName="LedgerTable", Key=partition_key(TOY_JOB, SCHEDULED, partition), ConsistentRead=True
        )["Item"]
        return {name: value.get("S", value.get("N")) for name, value in item.items() if "S" in value or "N" in value}

    def _count(self, queue: str) -> int:
        attributes = self.toy.sqs.get_queue_attributes(
            QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


@dataclass(frozen=True)
class Reference:
    state: dict[str, Any]
    # the partition whose run finished the tick, and that run's requests
    last_partition: str
    last_requests: list[RequestRecord]


def problems(state: dict[str, Any], reference: Reference) -> list[str]:
    problems = []
    for table, items in reference.state["tables"].items():
        if state["tables"][table] != items:
            problems.append(f"{table} differs from the clean run ({len(state['tables'][table])} vs {len(items)} items)")
    for key in ("status", "partitions", "summary", "left in the work queue", "left in the work DLQ"):
        if state[key] != reference.state[key]:
            problems.append(f"{key}: {state[key]!r}, the clean run: {reference.state[key]!r}")
    if state["status"] == "succeeded" and not 1 <= state["TickSucceeded"] <= MAX_SUCCESS_METRICS:
        problems.append(f"TickSucceeded emitted {state['TickSucceeded']} times for the succeeded tick")
    return problems


@contextmanager
def fanned_out_tick(
    dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], **environment: str
) -> Iterator[FannedOutTick]:
    # One lane: the injector arms a thread.
    settings = {"WORK_CONCURRENCY": "1", "WORK_PAGE_SIZE": "3", **environment}
    with (
        served_toy(dynamodb_endpoint, monkeypatch, **settings) as toy,
        time_machine.travel(datetime(2026, 12, 1, 2, 0, 20, tzinfo=UTC), tick=False) as clock,
    ):
        faults = FaultInjector()
        with faults.installed():
            yield FannedOutTick(toy, faults, clock, capsys)


# The seed and the code are the same for every test of the module, so is the clean run.
_references: list[Reference] = []


def reference_run(tick: FannedOutTick) -> Reference:
    if not _references:
        _references.append(clean_run(tick))
    return _references[0]


def clean_run(tick: FannedOutTick) -> Reference:
    tick.reset()
    deliveries = tick.run()
    assert [d.ended for d in deliveries] == ["ok"] * PARTITIONS
    state = tick.state()
    assert state["status"] == "succeeded"
    assert state["summary"] == CLEAN_SUMMARY
    assert state["TickSucceeded"] == 1
    last = deliveries[-1]
    # the finisher, and its note that TickSucceeded was emitted
    assert [r.operation for r in last.requests][-4:] == ["GetItem", "Query", "UpdateItem", "UpdateItem"]
    return Reference(state, last.partition, last.requests)
