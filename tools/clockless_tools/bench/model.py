"""The time a fanned-out tick takes on DynamoDB for a million due items, computed (not measured:
moto has no partitions and no write limits) from DynamoDB's per-partition write limit, the write
units each item was measured to cost, and the item rate one worker was measured to reach.

The model, stated where the figures are:

    rate  = min(workers * worker_rate,                     Lambda: measured per worker, added latency
                index_keys * KEY_WCU / index_wcu_per_item,  the sparse index's shard keys
                KEY_WCU / tenant_wcu_per_item * tenants)    the table keyed by tenant
    time  = items / rate
    partitions(table) = ceil(rate * table_wcu_per_item / KEY_WCU)

- `KEY_WCU` = 1,000 write units per second per partition key (and per physical partition).
- A transactional write costs 2 units per KB of each item; an index entry 1 unit per KB, 2 when
  its key moves (delete + put). Measured per item by bench/write_units.py, not assumed.
- The sparse index's writes all land on its shard keys (16): each is one partition key.
- Programs and sessions are keyed by tenant: a single tenant's items share one partition key
  unless DynamoDB splits it for heat (not counted on). `tenants` is how many tenants share the
  night's items evenly; the figures give 1 (worst case) and the count that stops binding.
- Each worker is one Lambda (its own CPU), so workers scale linearly up to the queue's
  MaximumConcurrency; the bench's threads share 2 cores and measure less (scaling figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from clockless_tools.bench.results import Figure

KEY_WCU: Final = 1_000  # write units per second, per partition key and per physical partition
MILLION: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class ItemCost:
    """Write units one item costs, by where they land (measured)."""

    table_wcu: dict[str, float]  # table -> units per item on it (counter actions spread in)
    index_wcu: float  # on the sparse index's shard keys
    tenant_table: str  # the table whose partition key is the tenant


@dataclass(frozen=True, slots=True)
class Limits:
    workers: int  # concurrent workers (ESM MaximumConcurrency)
    worker_rate: float  # items/s one worker reaches (measured)
    index_keys: int  # the sparse index's shard keys
    tenants: int = 1


@dataclass(frozen=True, slots=True)
class Outcome:
    items: int
    rate: float
    seconds: float
    bound: str  # which limit set the rate
    bounds: dict[str, float]
    partitions: dict[str, int]


def time_for(items: int, cost: ItemCost, limits: Limits) -> Outcome:
    """How long `items` take, which limit binds, and the partitions each table needs at that rate."""
    if items <= 0 or limits.workers <= 0 or limits.worker_rate <= 0 or limits.index_keys <= 0 or limits.tenants <= 0:
        raise ValueError(f"the model needs positive items and limits, got {items} items and {limits}")
    tenant_wcu = cost.table_wcu[cost.tenant_table]
    bounds = {
        "workers": limits.workers * limits.worker_rate,
        "index shard keys": limits.index_keys * KEY_WCU / cost.index_wcu if cost.index_wcu else math.inf,
        "tenant partition keys": limits.tenants * KEY_WCU / tenant_wcu if tenant_wcu else math.inf,
    }
    bound = min(bounds, key=lambda name: bounds[name])
    rate = bounds[bound]
    partitions = {table: max(1, math.ceil(rate * wcu / KEY_WCU)) for table, wcu in cost.table_wcu.items()}
    partitions["index"] = max(1, math.ceil(rate * cost.index_wcu / KEY_WCU))
    return Outcome(items, rate, items / rate, bound, bounds, partitions)


def tenants_to_unbind(cost: ItemCost, limits: Limits) -> int:
    """The fewest tenants (evenly loaded) for which the tenant key is no longer the binding limit."""
    index_rate = limits.index_keys * KEY_WCU / cost.index_wcu if cost.index_wcu else math.inf
    other = min(limits.workers * limits.worker_rate, index_rate)
    return max(1, math.ceil(other * cost.table_wcu[cost.tenant_table] / KEY_WCU))


def describe(outcome: Outcome) -> dict[str, object]:
    return {
        "items": outcome.items,
        "items_per_second": round(outcome.rate, 1),
        "seconds": round(outcome.seconds, 1),
        "bound_by": outcome.bound,
        "bounds_items_per_second": {name: round(rate, 1) for name, rate in outcome.bounds.items()},
        "partitions_needed": outcome.partitions,
    }


def model_figures(
    key: str, job: str, cost: ItemCost, limits: Limits, loop_rate: float
) -> tuple[list[Figure], dict[str, object]]:
    """1M items on DynamoDB, one tenant and enough tenants, against one sequential loop."""
    worst = time_for(MILLION, cost, limits)
    spread = Limits(limits.workers, limits.worker_rate, limits.index_keys, tenants_to_unbind(cost, limits))
    best = time_for(MILLION, cost, spread)
    loop_label = f"one sequential loop at its measured {loop_rate:,.0f} items/s"
    figures = [
        Figure(
            f"{key}.seconds_for_1m_{name}",
            f"{job}: modelled seconds for 1M due items on DynamoDB, {limits.workers} workers, "
            f"{tenants} tenant key(s); bound by {outcome.bound}; partitions needed: "
            f"{', '.join(f'{table} {count}' for table, count in outcome.partitions.items())}",
            "s",
            outcome.seconds,
            MILLION / loop_rate,
            loop_label,
        )
        for name, outcome, tenants in (("one_tenant", worst, 1), ("spread", best, spread.tenants))
    ]
    details: dict[str, object] = {
        "model": "rate = min(workers * worker_rate, index_keys * 1000 / index_wcu_per_item, "
        "tenants * 1000 / tenant_table_wcu_per_item); time = items / rate; "
        "partitions(table) = ceil(rate * wcu_per_item(table) / 1000)",
        "inputs": {
            "wcu_per_item_by_table": {table: round(units, 3) for table, units in cost.table_wcu.items()},
            "index_wcu_per_item": round(cost.index_wcu, 3),
            "tenant_table": cost.tenant_table,
            "workers": limits.workers,
            "worker_items_per_second": round(limits.worker_rate, 1),
            "index_shard_keys": limits.index_keys,
            "partition_key_wcu_per_second": KEY_WCU,
        },
        "one_tenant": describe(worst),
        "spread": {**describe(best), "tenants": spread.tenants},
    }
    return figures, details
