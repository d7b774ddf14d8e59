"""bench/lumps.py: the night as its transactions. Small transactions take the fluid model's time;
transactions large next to a partition's second (the capacity check's, at its scale) take longer,
by what the kit's backoff leaves idle."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clockless.fanout.pacing import PacingSettings
from clockless_tools.bench import lumps
from clockless_tools.bench.lumps import granular
from clockless_tools.bench.model import PARTITION_WCU, ItemCost, Night, predict

# A session's delete: transactional on the tenant table, its sparse-index entry on the worker's shard.
DELETE = ItemCost({"sessions": 2.0}, {"sessions/empty": 1.0}, "sessions", "sessions/empty", cpu_seconds=0.0)
ANY_SUPPLY = 1e9
UNPACED = PacingSettings(1e9, 1e9, 1.0)


def test_small_transactions_take_the_fluid_models_time() -> None:
    # GIVEN 16 tenants, tables warmed to 6 partitions, and each worker's share 40 transactions of
    # 99 items: each a sixth of a second on a partition at most
    night = Night(
        16 * 99 * 40,
        workers=16,
        tenants=16,
        warm={"sessions": 6_000.0, "sessions/empty": 6_000.0},
        supply=ANY_SUPPLY,
        worker_supply=ANY_SUPPLY,
    )

    fluid = predict(DELETE, night)
    # (a pacer that never slows a worker: the fluid's workers share the partitions without loss)
    lumpy = granular(DELETE, night, seeds=3, pacing=UNPACED)
    paced = granular(DELETE, night, seeds=3)

    # THEN both say the same, within 8 % (pages of 490 items make a few more transactions)
    assert lumpy.transactions >= 16 * 40
    assert lumpy.seconds == pytest.approx(fluid.seconds, rel=0.08)
    # and the kit's pacing, halved on each throttle and raised by 25 units after each transaction,
    # leaves the partitions idle for part of the night: the fluid's fair share is the best case
    assert fluid.seconds < paced.seconds < 1.5 * fluid.seconds


def test_one_large_transaction_per_worker_takes_longer_than_the_fluid() -> None:
    # GIVEN the same night at limits / 200 with 300 items: each worker's share is one transaction,
    # about two seconds of the partition that binds
    night = Night(
        300,
        workers=16,
        tenants=16,
        warm={"sessions": 6_000.0, "sessions/empty": 6_000.0},
        scale=200.0,
        supply=ANY_SUPPLY,
        worker_supply=ANY_SUPPLY,
    )

    fluid = predict(DELETE, night)
    lumpy = granular(DELETE, night)

    # THEN the transactions wait for one another's partitions and the backoff, refused many times
    assert lumpy.transactions == 16
    assert lumpy.refusals > 16
    assert lumpy.seconds > 1.1 * fluid.seconds
    assert lumpy.low <= lumpy.seconds <= lumpy.high


def test_the_backoff_draws_are_seeded() -> None:
    night = Night(300, workers=16, tenants=16, scale=200.0, supply=ANY_SUPPLY, worker_supply=ANY_SUPPLY)

    assert granular(DELETE, night, seeds=4) == granular(DELETE, night, seeds=4)


def test_each_partition_runs_claim_and_completion_wait_on_the_ticks_ledger_entry() -> None:
    # GIVEN each run's claim and completion costing 2 units each on the tick's one ledger key,
    # at limits / 200: 5 units a second, so 16 claims take 6 s of that key
    night = Night(16, workers=16, tenants=16, scale=200.0, supply=ANY_SUPPLY, worker_supply=ANY_SUPPLY)
    ledgered = replace(DELETE, tick_key_wcu_per_run=4.0)

    lumpy = granular(ledgered, night, seeds=4)

    # THEN the night lasts at least what the key takes for them, and they are not item transactions
    assert lumpy.seconds >= 16 * 4.0 / (PARTITION_WCU / 200) - 1.0
    assert lumpy.transactions == 16


def test_each_partition_runs_records_on_the_jobs_work_key_are_claimed_and_completed_with_it() -> None:
    # GIVEN each run's lease, cursor and done costing 6 units on the job's one work key, and its
    # claim and completion 2 on the tick's entry, at limits / 200 (5 units a second on each key)
    night = Night(32, workers=32, tenants=16, scale=200.0, supply=ANY_SUPPLY, worker_supply=ANY_SUPPLY)
    tick_only = replace(DELETE, tick_key_wcu_per_run=2.0)
    with_records = replace(tick_only, work_key_wcu_per_run=6.0)

    alone, recorded = (granular(cost, night, seeds=4) for cost in (tick_only, with_records))

    # THEN the runs wait on the work key too: 32 x 6 units at 5 a second, not the tick key's 32 x 2
    assert alone.seconds < 32 * 6.0 / (PARTITION_WCU / 200) - 1.0 <= recorded.seconds
    assert recorded.transactions == alone.transactions == 32


def test_a_workers_page_goes_on_into_its_next_key_and_is_packed_as_the_kit_packs_it() -> None:
    # keys 0 (3 items), 1 (none) and 2 (5 items), pages of 4: the first page ends in key 2
    assert list(lumps._worker_pages([(0, 3), (1, 0), (2, 5)], 4)) == [[((0, 3), (2, 1))], [((2, 4),)]]
    # a page of 150 items over two keys: a transaction of 99 (all of key 0's 80, 19 of key 1's), then 51
    assert list(lumps._worker_pages([(0, 80), (1, 70)], 200)) == [[((0, 80), (1, 19)), ((1, 51),)]]


def test_a_transaction_holds_as_many_items_as_the_kit_packs_for_their_actions() -> None:
    # a window's Put and its program's Update: 49 items beside the lane's counter; a Delete: 99
    window = ItemCost({"windows": 2.0, "programs": 2.0}, {"programs/due": 2.0}, "programs", "programs/due", 0.0)
    assert replace(window, actions_per_item=2).items_per_transaction == 49
    assert window.items_per_transaction == 99
    assert list(lumps._worker_pages([(0, 100)], 200, 49)) == [[((0, 49),), ((0, 49),), ((0, 2),)]]
