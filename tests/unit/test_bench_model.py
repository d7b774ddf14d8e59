"""bench/model.py and bench/cost.py: a night on DynamoDB from its per-key, per-table and Lambda
limits and measured costs; what it costs."""

from __future__ import annotations

import pytest

from clockless_tools.bench.cost import WRU_PER_MILLION, fanned_out_cost, loop_cost
from clockless_tools.bench.model import (
    GROWTH_SECONDS,
    KEY_WCU,
    MILLION,
    NEW_WCU,
    ItemCost,
    Night,
    declared_for,
    predict,
    slowest_partition,
    worker_supply,
)

# A window: its Put and its program's Update, transactional (2 units each), the program's due-index
# entry moved on its shard key (a delete and a put), a counter action per 49 programs.
WINDOW = ItemCost(
    {"windows": 2.0, "programs": 2.0, "ledger": 2 / 49},
    {"programs/due": 2.0},
    "programs",
    "programs/due",
    cpu_seconds=0.0003,
)
ANY_SUPPLY = 1e9


def test_one_tenant_is_held_to_its_partition_key() -> None:
    prediction = predict(WINDOW, Night(MILLION, workers=16, tenants=1, supply=ANY_SUPPLY))

    assert prediction.bound == "tenant partition keys"
    assert prediction.fleet_bounds["tenant partition keys"] == KEY_WCU / 2  # 500 programs/s on one key
    assert prediction.seconds == pytest.approx(MILLION / 500)


def test_a_new_table_holds_a_spread_night_to_4000_write_units_until_it_has_doubled() -> None:
    cold = predict(WINDOW, Night(MILLION, workers=16, tenants=16, supply=ANY_SUPPLY))

    # 2 units per item on each table and on the index: each new one takes 2,000 items/s
    assert cold.bound in {"windows on-demand", "programs on-demand", "programs/due on-demand"}
    assert cold.seconds == pytest.approx(MILLION / (NEW_WCU / 2))
    assert cold.growth_steps == 0  # 500 s: no 30 minutes held at the ceiling

    ten = predict(WINDOW, Night(10 * MILLION, workers=16, tenants=16, supply=ANY_SUPPLY))
    first_window = GROWTH_SECONDS * NEW_WCU / 2  # items done before the ceilings may double
    assert ten.growth_steps >= 1
    assert ten.seconds == pytest.approx(GROWTH_SECONDS + (10 * MILLION - first_window) / (2 * NEW_WCU / 2))


def test_warm_tables_leave_the_shard_keys_and_the_slowest_partition_to_set_the_time() -> None:
    shards = 16 * KEY_WCU / 2  # each worker's own shard key: 500 items/s
    warm = declared_for(WINDOW, shards)
    assert warm["programs/due"] == 16_000

    prediction = predict(WINDOW, Night(MILLION, workers=16, tenants=16, warm=warm, supply=ANY_SUPPLY))

    assert prediction.worker_rate == 500
    # the largest of 16 hash partitions of 1M is above 1M / 16: the tick waits for it
    assert prediction.slowest_partition == slowest_partition(MILLION, 16) > MILLION / 16
    assert prediction.bound == "the slowest partition"
    assert prediction.seconds == pytest.approx(prediction.slowest_partition / 500)


def test_lambda_supply_is_the_cpu_share_of_the_memory() -> None:
    assert worker_supply(WINDOW, 1_769) == pytest.approx(1 / 0.0003)
    assert worker_supply(WINDOW, 3_538) == pytest.approx(1 / 0.0003)  # one thread: one vCPU at most
    slow = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", cpu_seconds=0.01)

    prediction = predict(slow, Night(MILLION, workers=16, tenants=16, memory_mb=512))

    per_worker = (512 / 1_769) / 0.01  # 29 items/s: below its shard key's 500
    assert min(prediction.fleet_bounds, key=lambda n: prediction.fleet_bounds[n]) == "Lambda supply"
    assert prediction.worker_rate == pytest.approx(per_worker)
    assert prediction.seconds == pytest.approx(prediction.slowest_partition / per_worker)


def test_scale_divides_every_limit_so_fewer_items_take_the_same_time() -> None:
    full = predict(WINDOW, Night(MILLION, workers=16, tenants=1, supply=ANY_SUPPLY))
    scaled = predict(WINDOW, Night(MILLION // 50, workers=16, tenants=1, scale=50, supply=ANY_SUPPLY))

    assert scaled.seconds == pytest.approx(full.seconds)


def test_a_night_without_items_or_workers_is_refused() -> None:
    with pytest.raises(ValueError, match="positive items, workers"):
        Night(0, workers=16)
    with pytest.raises(ValueError, match="positive items, workers"):
        Night(MILLION, workers=0)


def test_a_night_costs_its_write_units_its_workers_time_and_its_messages() -> None:
    fanned = fanned_out_cost(MILLION, 6.0, seconds=540, workers=16, memory_mb=512, run_seconds=270)
    loop = loop_cost(MILLION, 6.0, seconds_per_item=0.02, memory_mb=512)

    assert fanned.write_units == pytest.approx(6 * WRU_PER_MILLION) == loop.write_units
    assert fanned.lambda_compute == pytest.approx(16 * 540 * 0.5 * 0.0000133334)
    assert fanned.sqs_requests == pytest.approx(16 * 2 * 3 / 1e6 * 0.40)  # two runs per partition
    assert loop.lambda_compute == pytest.approx(MILLION * 0.02 * 0.5 * 0.0000133334)
    assert loop.lambda_requests > 0  # 20,000 s of work needs 23 invocations of 15 minutes


def test_the_work_records_key_every_worker_shares_bounds_a_fleet_past_its_1000_units() -> None:
    # 0.08 units per item on `<job>#work` (window-generation's, metered at 2,000 items)
    shared = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", 0.0003, work_key_wcu=0.08)
    shards = 16 * KEY_WCU / 2
    warm = declared_for(shared, 2 * shards)

    sixteen = predict(shared, Night(MILLION, workers=16, tenants=16, warm=warm, supply=ANY_SUPPLY))
    forty = predict(shared, Night(MILLION, workers=40, tenants=40, warm=warm, supply=ANY_SUPPLY))

    # 16 workers at 500 items/s offer the key 640 units/s: under its 1,000, not the bound
    assert sixteen.fleet_bounds["work records key"] == pytest.approx(KEY_WCU / 0.08)
    assert sixteen.bound != "work records key"
    # 40 would offer 1,600: the key holds the fleet to 12,500 items/s
    assert forty.bound == "work records key"
    assert forty.seconds == pytest.approx(MILLION / (KEY_WCU / 0.08))
