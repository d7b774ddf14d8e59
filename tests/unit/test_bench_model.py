"""bench/model.py: a million items on DynamoDB, from per-key write limits and measured costs."""

from __future__ import annotations

import pytest

from clockless_tools.bench.model import KEY_WCU, MILLION, ItemCost, Limits, tenants_to_unbind, time_for

# A window: its Put and its program's Update, transactional (2 units each), the program's
# due-index entry moved (delete + put), and a counter action per 49 programs.
WINDOW = ItemCost({"windows": 2.0, "programs": 2.0, "ledger": 2 / 49}, 2.0, "programs")


def test_one_tenant_is_held_to_its_partition_key() -> None:
    outcome = time_for(MILLION, WINDOW, Limits(workers=16, worker_rate=1_000, index_keys=16))

    assert outcome.bound == "tenant partition keys"
    assert outcome.rate == KEY_WCU / 2  # 500 programs/s: 2 units each on one key
    assert outcome.seconds == 2_000


def test_spread_over_tenants_the_index_shards_bind_and_set_the_partitions() -> None:
    limits = Limits(workers=16, worker_rate=1_000, index_keys=16)
    tenants = tenants_to_unbind(WINDOW, limits)

    outcome = time_for(MILLION, WINDOW, Limits(16, 1_000, 16, tenants))

    assert tenants == 16
    assert outcome.bound == "index shard keys"
    assert outcome.rate == 16 * KEY_WCU / 2  # 8,000 programs/s over 16 shard keys
    assert outcome.seconds == 125
    assert outcome.partitions == {"windows": 16, "programs": 16, "ledger": 1, "index": 16}


def test_slow_workers_bind_before_the_table_does() -> None:
    outcome = time_for(MILLION, WINDOW, Limits(workers=16, worker_rate=100, index_keys=16, tenants=100))

    assert outcome.bound == "workers"
    assert outcome.seconds == MILLION / 1_600


def test_a_model_without_workers_is_refused() -> None:
    with pytest.raises(ValueError, match="positive items and limits"):
        time_for(MILLION, WINDOW, Limits(workers=0, worker_rate=100, index_keys=16))
