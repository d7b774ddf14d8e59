"""bench/model.py and bench/cost.py: a night on DynamoDB from its physical partitions, its tables'
ceilings and Lambda, over placements of its keys; what it costs."""

from __future__ import annotations

import pytest

from clockless_tools.bench import model
from clockless_tools.bench.cost import RRU_PER_MILLION, WRU_PER_MILLION, fanned_out_cost, loop_cost
from clockless_tools.bench.lumps import Granular
from clockless_tools.bench.model import (
    GROWTH_SECONDS,
    MILLION,
    NEW_WCU,
    PARTITION_WCU,
    ItemCost,
    Night,
    Placement,
    declared_for,
    floor,
    over_placements,
    predict,
    slowest_partition,
    worker_supply,
)
from clockless_tools.bench.night import night_figure, one_key_warning

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
SHARDS_RATE = 16 * PARTITION_WCU / 2  # every worker at its own shard key: 500 items/s each
WARM = declared_for(WINDOW, SHARDS_RATE)  # 16,000 write units/s on each: 16 partitions


def _apart(keys: int) -> tuple[float, ...]:
    """`keys` places each on a partition of its own among 16 (and among 4: four to each)."""
    return tuple((i + 0.5) / keys for i in range(keys))


def test_one_tenant_is_held_to_the_partition_its_key_is_on() -> None:
    prediction = predict(WINDOW, Night(MILLION, workers=16, tenants=1, warm=WARM, supply=ANY_SUPPLY))

    assert prediction.kind == "tenant keys"
    assert prediction.bound == "tenant keys: 1 of 1 on one programs partition (of 16)"
    assert prediction.seconds == pytest.approx(MILLION / 500)  # 1,000 / 2 units: 500 programs/s


def test_tenant_keys_hashed_onto_one_partition_share_its_1000_write_units() -> None:
    # GIVEN 16 tenant keys on tables warmed to 16 partitions, three of them on partition 0
    crowded = Placement((0.01, 0.02, 0.03, *_apart(16)[3:]), _apart(16))
    night = Night(MILLION, workers=16, tenants=16, warm=WARM, supply=ANY_SUPPLY)

    even = predict(WINDOW, night)
    prediction = predict(WINDOW, night, crowded)

    # THEN the busiest partition takes 3/16 of the items at 2 units each: 1,000 / (2 x 3/16) items/s
    assert prediction.bound == "tenant keys: 3 of 16 on one programs partition (of 16)"
    assert prediction.seconds == pytest.approx(
        MILLION / (PARTITION_WCU / (2 * 3 / 16)), rel=0.01
    )  # 375 s, the figure
    assert even.seconds < prediction.seconds
    assert even.kind != "tenant keys"


def test_shard_keys_hashed_onto_one_index_partition_slow_their_workers() -> None:
    # GIVEN the tenants apart, and shard keys 0 and 1 on one partition of the due index
    shards = (0.01, 0.02, *_apart(16)[2:])
    night = Night(MILLION, workers=16, tenants=64, warm=WARM, supply=ANY_SUPPLY)

    prediction = predict(WINDOW, night, Placement(_apart(64), shards))

    # THEN those two workers share 1,000 units: 250 items/s each, for their shard's items
    assert prediction.bound == "GSI shard keys: 2 of 16 on one programs/due partition (of 16)"
    largest = slowest_partition(MILLION, 16)
    assert prediction.seconds == pytest.approx(largest / 250, rel=0.02)


def test_a_new_table_has_four_partitions_and_its_4000_write_units_until_it_has_doubled() -> None:
    night = Night(MILLION, workers=16, tenants=16, supply=ANY_SUPPLY)
    cold = predict(WINDOW, night, Placement(_apart(16), _apart(16)))

    # four keys on each of four partitions: the partitions hold it to the table's own 2,000 items/s
    assert cold.fleet_bounds["on-demand: programs"] == NEW_WCU / 2
    assert cold.fleet_bounds["tenant keys: 4 of 16 on one programs partition (of 4)"] == NEW_WCU / 2
    assert cold.seconds == pytest.approx(MILLION / (NEW_WCU / 2), rel=0.01)
    assert cold.growth_steps == 0  # 500 s: no 30 minutes held

    ten = predict(
        WINDOW, Night(10 * MILLION, workers=16, tenants=16, supply=ANY_SUPPLY), Placement(_apart(16), _apart(16))
    )
    assert ten.growth_steps >= 1  # the peak doubled after 30 minutes, and the partitions with it
    assert ten.seconds < 10 * MILLION / (NEW_WCU / 2)
    assert ten.seconds > GROWTH_SECONDS


def test_over_placements_the_p95_is_above_the_expected_time_and_names_what_binds() -> None:
    night = Night(MILLION, workers=16, tenants=16, warm=WARM, supply=ANY_SUPPLY)

    spread = over_placements(WINDOW, night, samples=200)

    assert predict(WINDOW, night).seconds < spread.expected < spread.p95
    assert spread.at_p95.seconds == spread.p95
    assert spread.at_p95.kind in {"tenant keys", "GSI shard keys"}
    assert sum(spread.kinds.values()) == pytest.approx(1)
    assert over_placements(WINDOW, night, samples=200) == spread  # a fixed seed: the same figures


def test_spreading_one_tenant_over_buckets_takes_it_past_one_partition() -> None:
    bucketed = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", 0.0003, tenant_buckets=16)
    night = Night(MILLION, workers=16, tenants=1, warm=WARM, supply=ANY_SUPPLY)

    one_key = over_placements(WINDOW, night, samples=100)
    buckets = over_placements(bucketed, night, samples=100)

    assert one_key.p95 == pytest.approx(MILLION / 500)
    assert buckets.p95 < one_key.p95 / 3


def test_lambda_supply_is_the_cpu_share_of_the_memory() -> None:
    assert worker_supply(WINDOW, 1_769) == pytest.approx(1 / 0.0003)
    assert worker_supply(WINDOW, 3_538) == pytest.approx(1 / 0.0003)  # one thread: one vCPU at most
    slow = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", cpu_seconds=0.01)

    prediction = predict(slow, Night(MILLION, workers=16, tenants=16, memory_mb=512, warm=WARM))

    per_worker = (512 / 1_769) / 0.01  # 29 items/s: below its shard key's 500
    assert prediction.bound == "Lambda supply: each worker's CPU"
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


def test_a_night_costs_its_write_and_read_units_its_workers_time_and_its_messages() -> None:
    fanned = fanned_out_cost(MILLION, 6.0, seconds=540, workers=16, memory_mb=512, run_seconds=270, rcu_per_item=0.5)
    loop = loop_cost(MILLION, 6.0, seconds_per_item=0.02, memory_mb=512, rcu_per_item=1.0)

    assert fanned.write_units == pytest.approx(6 * WRU_PER_MILLION) == loop.write_units
    assert fanned.read_units == pytest.approx(0.5 * RRU_PER_MILLION)
    assert loop.read_units == pytest.approx(RRU_PER_MILLION)
    assert fanned.lambda_compute == pytest.approx(16 * 540 * 0.5 * 0.0000133334)
    assert fanned.sqs_requests == pytest.approx(16 * 2 * 3 / 1e6 * 0.40)  # two runs per partition
    assert loop.lambda_compute == pytest.approx(MILLION * 0.02 * 0.5 * 0.0000133334)
    assert loop.lambda_requests > 0  # 20,000 s of work needs 23 invocations of 15 minutes


def test_the_work_records_key_every_worker_shares_bounds_a_fleet_past_its_1000_units() -> None:
    # 0.08 units per item on `<job>#work` (window-generation's, metered at 2,000 items)
    shared = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", 0.0003, work_key_wcu=0.08)
    warm = declared_for(shared, 2 * SHARDS_RATE)

    sixteen = predict(shared, Night(MILLION, workers=16, tenants=16, warm=warm, supply=ANY_SUPPLY))
    many = predict(shared, Night(MILLION, workers=32, tenants=64, warm=warm, supply=ANY_SUPPLY))

    # 16 workers at 500 items/s offer the key 640 units/s: under its 1,000, not the bound
    assert sixteen.fleet_bounds["ledger key: the job's work records"] == pytest.approx(PARTITION_WCU / 0.08)
    assert sixteen.kind != "ledger key"
    # 32 would offer 1,280: the key holds the fleet to 12,500 items/s
    assert many.bound == "ledger key: the job's work records"
    assert many.seconds == pytest.approx(MILLION / (PARTITION_WCU / 0.08), rel=0.02)  # + the largest shard


def test_the_model_warns_when_a_tables_tenants_are_each_one_key() -> None:
    # Given a job whose tenant-keyed table puts a tenant under one key, and one that spreads it
    bucketed = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", 0.0003, tenant_buckets=16)
    night = Night(MILLION, workers=16, tenants=1, warm=WARM, supply=ANY_SUPPLY)

    # When the one-tenant night is modelled
    one_key, spread = (
        night_figure(
            "job",
            "1m.one_tenant.warm",
            night,
            over_placements(cost, night, samples=20),
            cost=cost,
            loop_seconds=0.0,
            warning=one_key_warning(cost),
        )
        for cost in (WINDOW, bucketed)
    )

    # Then the one-key table misses the 10-minute target and says why and what to do
    assert one_key.met is False
    assert "tenant keys: 1 of 1 on one programs partition" in one_key.label
    assert "WARNING: programs keys each tenant by one value" in one_key.label
    assert "docs/fan-out.md#a-whale-tenant" in one_key.label
    assert spread.met is True
    assert "WARNING" not in spread.label


def test_a_night_in_transactions_slower_than_its_target_misses_it_and_says_so() -> None:
    # GIVEN a targeted night whose fluid p95 is under its target (1M spread warm: 600 s)
    night = Night(MILLION, workers=16, tenants=16, warm=WARM, supply=ANY_SUPPLY)
    spread = over_placements(WINDOW, night, samples=20)
    assert spread.p95 < 600
    # and the p95's placement is kept: the model gives the p95 again from it
    assert predict(WINDOW, night, spread.placement_at_p95) == spread.at_p95

    # WHEN the same placement's night in whole transactions takes longer than the target
    slow = Granular(seconds=650.0, low=640.0, high=660.0, transactions=10_000, refusals=5.0, draws=3)
    fluid_only, with_slow = (
        night_figure("job", "1m.spread.warm", night, spread, cost=WINDOW, loop_seconds=0.0, transactions=t)
        for t in (None, slow)
    )

    # THEN the figure prints it beside the fluid p95, and the target is missed
    assert fluid_only.met is True
    assert with_slow.met is False
    assert with_slow.value == fluid_only.value == spread.p95
    assert "in whole transactions at that placement" in with_slow.label
    assert "mean over 3 draws; no on-demand growth, so past 30 minutes an upper bound): 650 s (640-660)" in (
        with_slow.label
    )
    assert with_slow.target == "p95 < 600 s, in transactions too"


def test_a_worker_reads_its_keys_one_after_the_other_so_more_keys_add_no_workers() -> None:
    # GIVEN a night held by each worker's CPU, its items on 4 keys per worker instead of one
    slow = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", cpu_seconds=0.01)
    per_worker = (512 / 1_769) / 0.01
    even = [1_000] * 64  # each of 16 workers reads 4 keys of 1,000 items
    night = Night(64_000, workers=16, tenants=16, memory_mb=512, warm=WARM, partition_items=even, keys=64)

    prediction = predict(slow, night)

    # THEN the 16 workers take their 4,000 items each at their own rate, not 64 workers a key each
    assert prediction.seconds == pytest.approx(4_000 / per_worker)
    assert predict(slow, Night(64_000, workers=64, tenants=16, memory_mb=512, warm=WARM)).seconds < (
        prediction.seconds / 3
    )


def test_a_night_needs_a_key_per_worker_and_a_worker_for_each_known_key() -> None:
    with pytest.raises(ValueError, match="at least one key per worker"):
        Night(MILLION, workers=16, keys=8)
    with pytest.raises(ValueError, match="key_workers name the worker"):
        Night(MILLION, workers=2, partition_items=[1, 2, 3], key_workers=[0, 1])


def test_the_floor_is_the_tightest_tables_write_units_at_its_declared_rate_and_is_printed_with_the_ratio() -> None:
    # GIVEN 1M items, 2 write units each on the windows and programs tables and on the due index,
    # every one declared at 16,000 write units per second
    night = Night(MILLION, workers=16, tenants=16, warm=WARM, supply=ANY_SUPPLY)

    least = floor(WINDOW, night)

    # THEN each needs 1M x 2 / 16,000 = 125 s; the ledger's counters, declared below a new table's
    # 4,000, take theirs at 4,000
    assert least.seconds == pytest.approx(MILLION * 2 / WARM["programs"])
    assert least.binding in {"windows", "programs", "programs/due"}
    assert set(least.by_table) == {"windows", "programs", "ledger", "programs/due"}
    assert least.by_table["ledger"] == pytest.approx(MILLION * (2 / 49) / NEW_WCU)
    # and no night is faster than it
    spread = over_placements(WINDOW, night, samples=20)
    assert spread.expected >= least.seconds * (1 - 1e-9)
    figure = night_figure("job", "1m.spread.warm", night, spread, cost=WINDOW, loop_seconds=0.0)
    assert f"{least.seconds:,.0f} s, expected {spread.expected / least.seconds:.2f}x it" in figure.label
    # a cold night's floor is a new table's 4,000 units per second
    assert floor(WINDOW, Night(MILLION, workers=16)).seconds == pytest.approx(MILLION * 2 / NEW_WCU)


def test_growth_is_an_option_and_splits_each_partition_in_two() -> None:
    # GIVEN a cold 10M night, long past 30 minutes at a new table's 4,000 units per second
    grown = predict(WINDOW, Night(10 * MILLION, workers=16, tenants=16, supply=ANY_SUPPLY))
    held = predict(WINDOW, Night(10 * MILLION, workers=16, tenants=16, supply=ANY_SUPPLY, growth=False))

    # THEN without growth no ceiling doubles and the night is slower; with it, it doubles
    assert held.growth_steps == 0
    assert grown.growth_steps > 0
    assert held.seconds > grown.seconds
    # and a table's partitions split in two: 23 that no longer serve 40,000 units become 46, not 40
    assert model._split(23, 40_000.0, 1.0) == 46
    assert model._split(4, 8_000.0, 1.0) == 8
    assert model._split(4, 4_000.0, 1.0) == 4


def test_the_bound_named_is_what_held_the_worker_that_ends_the_night() -> None:
    # GIVEN one worker with ten times the items of the others, each held by its own CPU
    slow = ItemCost(WINDOW.table_wcu, WINDOW.index_wcu, "programs", "programs/due", cpu_seconds=0.01)
    night = Night(
        11_000, workers=2, tenants=16, memory_mb=512, warm=WARM, partition_items=[10_000, 1_000], growth=False
    )

    prediction = predict(slow, night)

    # THEN what bound the long worker, all night, is named, and only its seconds are counted
    assert prediction.bound == "Lambda supply: each worker's CPU"
    assert prediction.binding == {prediction.bound: pytest.approx(prediction.seconds)}
