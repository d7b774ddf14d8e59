"""How long a fanned-out night takes on DynamoDB, and what it costs: a model, stated here, fed with
what `make bench` measures, and checked against the capacity-faithful emulator
(`bench/capacity_check.py`) at a scale this machine runs.

Per job, the inputs are measured: the write units each item costs on each table and index
(bench/write_units.py), the client CPU one item takes (bench/scaling.py), the worker's memory and
its shard count (template.yaml). The limits are AWS's, each from its page:

- `KEY_WCU`: a partition key value takes 1,000 write units per second, on a table and on each GSI
  (developer guide, "Understanding DynamoDB warm throughput in different scenarios"; "Key range
  throughput exceeded"). A worker writes one shard key of the job's index: it can go no faster
  than 1,000 / (index units per item). A tenant's items share its partition key on the
  tenant-keyed table: all tenants together go no faster than tenants x 1,000 / (units per item);
- `NEW_WCU`: a new on-demand table or GSI sustains 4,000 write units per second ("DynamoDB
  on-demand capacity mode"); a declared WarmThroughput starts it there instead ("Understanding
  DynamoDB warm throughput"); every table and index of the item bounds the whole fleet;
- `GROWTH_SECONDS`: on-demand serves up to double a previous peak; the peak may double only after
  30 minutes (re:Post "on-demand table throttling"): the model doubles a ceiling the fleet held
  for a whole 30 minutes;
- `TABLE_QUOTA_WCU`: 40,000 write request units per second per on-demand table, the default quota
  ("DynamoDB on-demand capacity mode", throughput default quotas);
- `VCPU_MB`: Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB
  (Lambda developer guide, "Configure Lambda function memory"); a worker's Python is one thread
  of CPU, so its supply is min(1, memory / 1,769) / (client CPU seconds per item);
- `ACCOUNT_CONCURRENCY`: 1,000 concurrent executions per Region by default (Lambda quotas): the
  workers of all jobs at once.

The night: the fleet's rate is the least of the bounds; each partition's own rate is the least of
its worker's supply and its shard key; the tick ends with its slowest partition (the largest
shard: its measured size, or for a hash spread N/S + 3 standard deviations), so

    time = max(items / fleet rate (integrated as the ceilings grow), slowest partition / worker rate)
           + the coordinator's own time, when measured
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

KEY_WCU: Final = 1_000.0
NEW_WCU: Final = 4_000.0
TABLE_QUOTA_WCU: Final = 40_000.0
GROWTH_SECONDS: Final = 1_800.0
VCPU_MB: Final = 1_769.0
ACCOUNT_CONCURRENCY: Final = 1_000
MILLION: Final = 1_000_000
SOURCES: Final = {
    "key_wcu": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html",
    "new_wcu": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html",
    "warm": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html",
    "growth": "https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb",
    "gsi_back_pressure": "https://repost.aws/knowledge-center/dynamodb-gsi-throttling-table",
    "vcpu": "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html",
    "concurrency": "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
}


@dataclass(frozen=True, slots=True)
class ItemCost:
    """What one item costs, measured."""

    table_wcu: Mapping[str, float]  # base table -> write units per item (transactions counted twice)
    index_wcu: Mapping[str, float]  # "table/index" -> write units per item
    tenant_table: str | None  # the table whose partition key is the tenant
    shard_index: str  # the "table/index" whose shard key each worker writes
    cpu_seconds: float  # client CPU per item
    # on the ledger key every worker of the job writes (`<job>#work`: partition, lane and cursor records)
    work_key_wcu: float = 0.0

    @property
    def total_wcu(self) -> float:
        return sum(self.table_wcu.values()) + sum(self.index_wcu.values())


@dataclass(frozen=True, slots=True)
class Night:
    """What the night asks of DynamoDB and Lambda."""

    items: int
    workers: int  # the worker's MaximumConcurrency, equal to the shards (rule shards-match-concurrency)
    tenants: int = 1
    memory_mb: int = 512
    # None: cold (a new on-demand table); else write units/s declared per table or "table/index"
    # (one not named starts cold)
    warm: Mapping[str, float] | None = None
    # every limit divided by this (the emulator's scale)
    scale: float = 1.0
    # items/s the whole fleet can offer, when it is known (this machine); None: Lambda's CPU share
    supply: float | None = None
    # items/s one worker can offer when it is known (this machine); None: Lambda's CPU share
    worker_supply: float | None = None
    # the items of each partition, when known; None: a hash spread over `workers` shards
    partition_items: Sequence[int] = field(default_factory=tuple)
    # time outside the writes (the coordinator's claim and fan-out), when measured
    fixed_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.items <= 0 or self.workers <= 0 or self.tenants <= 0 or self.memory_mb <= 0 or self.scale <= 0:
            raise ValueError(f"a night needs positive items, workers, tenants, memory and scale: {self}")


@dataclass(frozen=True, slots=True)
class Prediction:
    seconds: float
    bound: str  # what sets the time
    fleet_bounds: dict[str, float]  # items/s at the start, by limit
    worker_rate: float  # items/s one partition can go
    slowest_partition: int
    growth_steps: int  # times a ceiling doubled during the night


def slowest_partition(items: int, shards: int) -> int:
    """The largest of `shards` hash partitions of `items`: mean + 3 standard deviations."""
    mean = items / shards
    return min(items, math.ceil(mean + 3 * math.sqrt(mean * (1 - 1 / shards))))


def worker_supply(cost: ItemCost, memory_mb: int) -> float:
    """Items/s one worker's CPU share offers (Lambda: one thread's share of its memory's vCPU)."""
    return min(1.0, memory_mb / VCPU_MB) / cost.cpu_seconds if cost.cpu_seconds > 0 else math.inf


def _ceilings(cost: ItemCost, night: Night) -> dict[str, float]:
    """Write units/s each table and index serves from the start of the night (scaled)."""
    resources = [*cost.table_wcu, *cost.index_wcu]
    warm = night.warm or {}
    return {name: min(TABLE_QUOTA_WCU, max(NEW_WCU, warm.get(name, NEW_WCU))) / night.scale for name in resources}


def predict(cost: ItemCost, night: Night) -> Prediction:
    key = KEY_WCU / night.scale
    per_worker = worker_supply(cost, night.memory_mb) if night.worker_supply is None else night.worker_supply
    shard_wcu = cost.index_wcu.get(cost.shard_index, 0.0)
    worker_rate = min(per_worker, key / shard_wcu if shard_wcu else math.inf)
    workers = min(night.workers, ACCOUNT_CONCURRENCY)
    fixed = {
        "Lambda supply": workers * per_worker if night.supply is None else night.supply,
        "index shard keys": workers * worker_rate,
    }
    tenant_wcu = cost.table_wcu.get(cost.tenant_table or "", 0.0)
    if tenant_wcu:
        fixed["tenant partition keys"] = night.tenants * key / tenant_wcu
    if cost.work_key_wcu:
        # one key for the whole fleet: partitions, lanes and cursors of every worker of the job
        fixed["work records key"] = key / cost.work_key_wcu
    ceilings = _ceilings(cost, night)
    units = {**cost.table_wcu, **cost.index_wcu}

    def fleet(now: dict[str, float]) -> tuple[float, str, dict[str, float]]:
        bounds = dict(fixed)
        for name, ceiling in now.items():
            if units[name]:
                bounds[f"{name} on-demand"] = ceiling / units[name]
        name = min(bounds, key=lambda n: bounds[n])
        return bounds[name], name, bounds

    remaining, seconds, steps = float(night.items), 0.0, 0
    rate, bound, start_bounds = fleet(ceilings)
    while True:
        rate, _, _ = fleet(ceilings)
        if remaining <= rate * GROWTH_SECONDS:
            seconds += remaining / rate
            break
        remaining -= rate * GROWTH_SECONDS
        seconds += GROWTH_SECONDS
        # a ceiling the fleet held for the whole window may double (up to the table quota)
        grown = False
        for name, ceiling in ceilings.items():
            if units[name] and rate * units[name] >= ceiling * 0.999:
                ceilings[name] = min(TABLE_QUOTA_WCU / night.scale, 2 * ceiling)
                grown = grown or ceilings[name] > ceiling
        steps += grown
    largest = max(night.partition_items) if night.partition_items else slowest_partition(night.items, night.workers)
    partition_seconds = largest / worker_rate
    if partition_seconds > seconds:
        seconds, bound = partition_seconds, "the slowest partition"
    return Prediction(seconds + night.fixed_seconds, bound, start_bounds, worker_rate, largest, steps)


def declared_for(cost: ItemCost, items_per_second: float) -> dict[str, float]:
    """The WarmThroughput each table and index needs to take `items_per_second` (whole units)."""
    units = {**cost.table_wcu, **cost.index_wcu}
    return {name: float(math.ceil(items_per_second * wcu)) for name, wcu in units.items() if wcu}
