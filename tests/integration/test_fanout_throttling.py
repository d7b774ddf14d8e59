"""Throttling on a fanned-out tick, shaped as DynamoDB shapes it (a transaction cancelled with
`ThrottlingError` among its reasons, which botocore does not retry; `ThrottlingException` on any
other request, retried by botocore until it gives up), over the embedded server and SQS, with
the kit's waits on simulated time. A throttle makes the tick slower, never failed: the tick ends
as the clean run leaves it (item by item, the same counters, nothing in either queue), with no
message shown again after a visibility timeout and nothing in the work DLQ.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from clockless.fanout.keys import tick_key
from clockless_tools.local.capacity import CapacitySettings, Start
from clockless_tools.local.dynamodb import EmbeddedDynamoDB
from clockless_tools.local.partitions import Throughput
from clockless_tools.simulate.clock import SimulatedClock
from clockless_tools.simulate.faults import FaultKind
from tests.integration.fanned_out_tick import (
    SCHEDULED,
    Aim,
    FannedOutTick,
    fanned_out_tick,
    problems,
    reference_run,
)
from tests.unit.kit.toy import TOY_JOB

THROTTLED = FaultKind.TRANSACTION_THROTTLED
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.fixture
def tick(
    dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[FannedOutTick]:
    with fanned_out_tick(dynamodb_endpoint, monkeypatch, capsys) as fanned_out:
        # Backoff and pacing wait on simulated time: the waits are real in length, not in seconds spent.
        clock = SimulatedClock(fanned_out.clock)
        fanned_out.worker.clockless_runner.clock = clock
        fanned_out.job.clock = clock
        yield fanned_out


def test_every_request_of_a_partition_run_throttled_once_costs_no_stall(tick: FannedOutTick) -> None:
    # Given every request of the partition run throttled on its first send (its message's
    # visibility bound, lease, pages, item transactions, cursor, done, finisher), and resent by the kit
    reference = reference_run(tick)
    tick.reset()
    aim = Aim(reference.last_partition, 1, THROTTLED, then=dict.fromkeys(range(3, 80, 2), THROTTLED))
    # When the tick runs
    deliveries = tick.run(aim)
    # Then one delivery finished the partition: no visibility timeout, no dead letter, the clean run's effects
    throttled = [r.operation for r in deliveries[0].requests if r.fault is THROTTLED]
    assert len(throttled) == len(reference.last_requests)
    assert {"ChangeMessageVisibility", "UpdateItem", "Query", "TransactWriteItems", "GetItem"} <= set(throttled)
    assert [d.ended for d in deliveries] == ["ok"]
    assert (tick.stalls, tick.delayed_s) == (0, 0)
    assert problems(tick.state(), reference) == []


def test_an_item_transaction_throttled_thirty_times_in_a_row_is_waited_out(tick: FannedOutTick) -> None:
    reference = reference_run(tick)
    operations = [r.operation for r in reference.last_requests]
    first_transaction = 1 + operations.index("TransactWriteItems")
    tick.reset()
    aim = Aim(
        reference.last_partition,
        first_transaction,
        THROTTLED,
        then={first_transaction + n: THROTTLED for n in range(1, 30)},
    )
    deliveries = tick.run(aim)
    assert [d.ended for d in deliveries] == ["ok"]
    assert sum(r.fault is THROTTLED for r in deliveries[0].requests) == 30
    assert tick.stalls == 0
    assert problems(tick.state(), reference) == []


def test_a_throttle_past_the_budget_hands_on_after_a_delay_and_keeps_the_cursor(tick: FannedOutTick) -> None:
    # Given runs with 30 s left, all of it the hand-on margin (WORK_TIME_BUDGET_SECONDS): the
    # first page's transaction throttled once is a budget spent
    reference = reference_run(tick)
    tick.remaining_ms = 30_000
    tick.reset()
    tick.start()
    # When the partition's first message is delivered with its transaction throttled
    (first,) = tick.drain(Aim(reference.last_partition, 4, THROTTLED), limit=1)
    # Then the run stored nothing applied, released the lease, noted why and sent a continuation
    assert first.ended == "ok"
    assert [r.operation for r in first.requests] == [
        "ChangeMessageVisibility",  # the message hidden until the attempt is over
        "TransactWriteItems",  # the lease, with the ledger's check
        "Query",
        "TransactWriteItems",  # throttled
        "UpdateItem",  # hand on: the lease released, why noted
        "SendMessage",
    ]
    record = tick.partition_record(reference.last_partition)
    assert record["lease_until"] == "0"
    assert record["throttle_continuations"] == "1"
    assert record["receives"] == "1"
    assert record["last_error"].startswith("throttled: TransactionCanceledException (ThrottlingError) on ")
    assert "ToyItems" in record["last_error"]
    assert "\n" not in record["last_error"]
    # And the continuation, visible after its delay, takes the run on to the end
    rest = tick.drain()
    assert [d.ended for d in rest] == ["ok"] * len(rest)
    assert 1 <= tick.delayed_s <= 5  # the first throttled hand-on waits 3 to 5 s
    assert tick.stalls == 0
    assert int(tick.partition_record(reference.last_partition)["hops"]) == len(rest)
    assert problems(tick.state(), reference) == []


def test_a_throttle_past_the_budget_on_a_later_page_keeps_the_stored_cursor(tick: FannedOutTick) -> None:
    # Given runs with a millisecond of budget left: the first page goes through (its cursor
    # stored), the second page's transaction is throttled, and its first backoff (seeded jitter:
    # 42 ms) is more than the run can afford
    reference = reference_run(tick)
    tick.remaining_ms = 30_001
    tick.reset()
    tick.start()
    (clean,) = tick.drain(limit=1)
    operations = [r.operation for r in clean.requests]
    second_page = [i for i, op in enumerate(operations) if op == "Query"][1]
    throttled = second_page + 2  # (1-based) the second page's first transaction
    assert operations[throttled - 1] == "TransactWriteItems"
    tick.reset()
    tick.start()
    random.seed(0)
    (first,) = tick.drain(Aim(reference.last_partition, throttled, THROTTLED), limit=1)
    # the lease, the first page, its cursor, the second page, its throttled transaction, then
    # the hand-on (the lease released, the stored cursor kept) and the continuation
    assert [r.operation for r in first.requests] == [*operations[:throttled], "UpdateItem", "SendMessage"]
    assert operations[second_page - 1] == "UpdateItem"  # the first page's cursor, stored
    record = tick.partition_record(reference.last_partition)
    assert "cursor" in record
    assert (record["lease_until"], record["throttle_continuations"]) == ("0", "1")
    # When the continuation runs (from that cursor), it finishes the partition
    rest = tick.drain()
    # its message's visibility bound, its lease, its page
    assert [r.operation for r in rest[0].requests][:3] == ["ChangeMessageVisibility", "UpdateItem", "Query"]
    assert tick.stalls == 0
    assert problems(tick.state(), reference) == []


@pytest.mark.parametrize("kind", [FaultKind.LOST_RESPONSE, FaultKind.DIES_AFTER, FaultKind.REFUSED], ids=str)
@pytest.mark.parametrize("request_index", [5, 6], ids=["hand-on write", "continuation send"])
def test_handing_on_after_a_throttle_survives_faults(tick: FannedOutTick, kind: FaultKind, request_index: int) -> None:
    """The hand-on write lost, refused or followed by the attempt's death; the continuation sent
    twice (its answer lost, botocore resends), never sent, or the attempt dying once it is sent:
    each item applied once, the partition finished, nothing in the DLQ."""
    reference = reference_run(tick)
    tick.remaining_ms = 30_000
    tick.reset()
    # (1: the visibility bound, 2: the lease, 3: the page, 4: its transaction, throttled)
    tick.run(Aim(reference.last_partition, 4, THROTTLED, then={request_index: kind}))
    assert problems(tick.state(), reference) == []


def test_a_throttled_claim_and_completion_are_waited_out_by_the_coordinator(tick: FannedOutTick) -> None:
    # Given the coordinator's claim throttled 10 times and its completion 8 times, as DynamoDB
    # throttles a transaction (botocore does not retry it)
    reference = reference_run(tick)
    tick.reset()
    claim = dict.fromkeys(range(2, 11), THROTTLED)
    completion = dict.fromkeys(range(13, 21), THROTTLED)
    # When the tick is delivered
    attempts = tick.start(Aim("coordinator", 1, THROTTLED, then={**claim, **completion}))
    # Then the first attempt claims, fans out and completes: nothing raised for Lambda to retry
    assert [a.ended for a in attempts] == ["executed"]
    operations = [r.operation for r in attempts[0].requests]
    assert operations == ["TransactWriteItems"] * 11 + ["SendMessageBatch"] + ["TransactWriteItems"] * 9
    deliveries = tick.drain()
    assert [d.ended for d in deliveries] == ["ok"]
    assert problems(tick.state(), reference) == []
    entry = tick.toy.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED), ConsistentRead=True)
    assert entry["Item"]["attempts"]["N"] == "1"


def test_a_worker_paces_its_writes_to_its_shard_key_rate(
    dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a shard key taking 2 write units per second, 2 units per item (the settings' variables)
    with fanned_out_tick(dynamodb_endpoint, monkeypatch, capsys, WORK_KEY_WRITE_UNITS_PER_SECOND="2") as tick:
        clock = SimulatedClock(tick.clock)
        tick.worker.clockless_runner.clock = clock
        tick.reset()
        # When the partition's 6 items are sent (pages of 3; one item is found already done, and
        # its transaction is sent again without it)
        deliveries = tick.run()
        # Then the worker waited for its bucket: 6 + 4 + 6 units at 2 per second, less the first
        # second's 2
        assert [d.ended for d in deliveries] == ["ok"]
        assert clock.waited == pytest.approx(7.0)
        assert tick.state()["summary"]["applied"] == 5


@pytest.mark.parametrize(
    "settings",
    [
        # a new table's 4 partitions at 1,000 / 500 = 2 write units a second each
        CapacitySettings(start=Start.COLD, scale=500),
        # one partition per table and index (the least a table has), hot partitions split for heat (CI's)
        pytest.param(
            CapacitySettings(
                start=Start.COLD, scale=500, new_on_demand=Throughput(1_000, 3_000), split_after_seconds=5
            ),
            marks=pytest.mark.slow,
        ),
    ],
    ids=["cold partitions", "one partition, split for heat"],
)
def test_a_tick_on_the_capacity_emulator_is_slower_never_stalled_nor_dead_lettered(
    tick: FannedOutTick, dynamodb_server: EmbeddedDynamoDB, settings: CapacitySettings
) -> None:
    # Given DynamoDB's limits enforced by physical partition, scaled down so the toy's partition
    # run meets them: its lease, its item transactions and its cursor land on partitions that
    # hold a couple of write units a second, in simulated time
    reference = reference_run(tick)
    tick.reset()
    capacity = dynamodb_server.enforce(settings)
    assert capacity is not None
    capacity.clock = time.time  # time-machine's: the kit's waits move it
    try:
        # When the tick runs
        deliveries = tick.run()
    finally:
        dynamodb_server.enforce(None)
    # Then DynamoDB refused writes for capacity, and the tick still ended as the clean run did:
    # every run ended ok (hand-ons after a delay, never a visibility timeout), nothing dead-lettered
    assert sum(capacity.stats.throttled.values()) > 0
    assert [d.ended for d in deliveries] == ["ok"] * len(deliveries)
    assert tick.stalls == 0
    assert problems(tick.state(), reference) == []
