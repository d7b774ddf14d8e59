"""How long a fanned-out night takes on DynamoDB, and what it costs: a model, stated here, fed with
what `make bench` measures, and checked against the capacity-faithful emulator
(`bench/capacity_check.py`) at a scale this machine runs.

Per job, the inputs are measured: the write units each item costs on each table and index
(bench/write_units.py), the client CPU one item takes (bench/scaling.py), the worker's memory and
its shard count (template.yaml). The limits are AWS's, each from its page (`SOURCES`):

- **physical partitions** (`clockless_tools.local.partitions`, the emulator's own placement): a
  table or index has max(writes / 1,000, reads / 3,000) partitions of its current throughput, and
  each serves at most 1,000 write units per second. Key values land on them by hash, so distinct
  keys share one: with 16 tenant keys on 16 partitions the busiest usually holds 2 to 4;
- `NEW_WCU` / `NEW_RCU`: a new on-demand table or GSI serves 4,000 write and 12,000 read units
  per second ("DynamoDB on-demand capacity mode"); a declared WarmThroughput starts it there
  instead ("Understanding DynamoDB warm throughput");
- `GROWTH_SECONDS`: on-demand serves up to double a previous peak; the peak may double only after
  30 minutes (re:Post "on-demand table throttling"): with `Night.growth`, every 30 minutes the model
  raises a ceiling to double the peak the fleet put on it in the 30 minutes before, and splits each
  of its partitions in two until they serve it (as the emulator does); without it (the targets)
  the night holds at the ceilings it starts with;
- `TABLE_QUOTA_WCU`: 40,000 write request units per second per on-demand table (default quota);
- `VCPU_MB`: Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB; a
  worker's Python is one thread, so its supply is min(1, memory / 1,769) / (CPU seconds per item);
- `ACCOUNT_CONCURRENCY`: 1,000 concurrent executions per Region by default (Lambda quotas).
- Burst capacity (300 s of unused capacity) is left out: AWS says not to count on it, and it
  never lifts a partition past its own limit, which is what binds a big night.

The night, for one placement of the keys, run forward in time: each worker reads its index shard
keys one after the other (`Night.keys` of them over `Night.workers`: key k is worker k % workers'),
and goes at the least of its CPU supply, its current key's own limit (1,000 / index units per item:
the pacing) and that key's share of its index partition (the keys being written on one GSI
partition at once share its 1,000 units).
The fleet as a whole goes at most at the least of the fleet bounds: the busiest tenant partition
(1,000 / (tenant-table units per item x the share of the tenant keys on it)), the busiest
partition of every other table (its keys are many: N / partitions + 3 standard deviations of a
hash spread), the ledger key every worker writes (1,000 / its units per item), each table's and
index's current ceiling, Lambda's supply. Workers share the fleet's rate fairly (AIMD: water
filling); when a shard is done the others speed up; every 30 minutes a ceiling grows to double the
peak of the window before (on-demand's growth, its partitions halved with it). The tick ends
with its last worker, plus the coordinator's own time when measured. What set the time is the
limit that held that last worker the longest (`Prediction.bound`). `floor` is the yardstick: the
night's write units on each table and index at the ceiling it starts with, the tightest binding.

Over placements (`over_placements`): the same for `PLACEMENTS` random placements of the tenant and
shard keys: the expected time and the 95th percentile, with the placement at the p95.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from clockless.fanout.writer import MAX_ITEM_ACTIONS
from clockless_tools.local.partitions import (
    PARTITION_WRITE_UNITS,
    HashRanges,
    busiest,
    partition_loads,
    partitions_for,
)

PARTITION_WCU: Final = PARTITION_WRITE_UNITS
NEW_WCU: Final = 4_000.0
NEW_RCU: Final = 12_000.0
TABLE_QUOTA_WCU: Final = 40_000.0
GROWTH_SECONDS: Final = 1_800.0
VCPU_MB: Final = 1_769.0
ACCOUNT_CONCURRENCY: Final = 1_000
MILLION: Final = 1_000_000
PLACEMENTS: Final = 1_000
PERCENTILE: Final = 0.95
SOURCES: Final = {
    "partition_limits": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html",
    "hot_partitions": (
        "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
        "throttling-key-range-limit-exceeded-mitigation.html"
    ),
    "partitions": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.Partitions.html",
    "burst_adaptive": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/burst-adaptive-capacity.html",
    "new_on_demand": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html",
    "warm": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html",
    "growth": "https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb",
    "gsi_back_pressure": "https://repost.aws/knowledge-center/dynamodb-gsi-throttling-table",
    "vcpu": "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html",
    "concurrency": "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
}
_DONE: Final = 1e-9


@dataclass(frozen=True, slots=True)
class ItemCost:
    """What one item costs, measured."""

    table_wcu: Mapping[str, float]  # base table -> write units per item (transactions counted twice)
    index_wcu: Mapping[str, float]  # "table/index" -> write units per item
    tenant_table: str | None  # the table whose partition key is the tenant (or tenant#bucket)
    shard_index: str  # the "table/index" whose shard key each worker writes
    cpu_seconds: float  # client CPU per item
    # on the ledger key every worker of the job writes (`<job>#work`), per item: its lanes' counters,
    # one per transaction
    work_key_wcu: float = 0.0
    read_units: float = 0.0  # read units per item, every table and index (for the cost)
    # the key values one tenant's items spread over on the tenant table (1: the tenant id alone)
    tenant_buckets: int = 1
    # the units per item the worker's pacing charges its shard key (WORK_KEY_WRITE_UNITS_PER_ITEM);
    # 0: the index's own units per item
    paced_units: float = 0.0
    # the kit's own tables (idempotency, ledger): records on a few keys each, not the items' keys
    bookkeeping: frozenset[str] = frozenset()
    # on the tick's own ledger entry (`<job>`), per partition run: its claim and its completion
    # (a fixed cost, not an item's: bench/lumps.py runs it, the fluid leaves it out)
    tick_key_wcu_per_run: float = 0.0
    # on the same `<job>#work` key, per partition run: its partition record's lease, cursor and done
    # (a fixed cost too: bench/lumps.py runs it beside the tick entry's, the fluid leaves it out)
    work_key_wcu_per_run: float = 0.0
    # the write actions one item's transaction holds (window generation: a window's Put and its
    # program's Update; session cleanup: a Delete), as counted: the kit packs
    # MAX_ITEM_ACTIONS // this many items to a transaction
    actions_per_item: int = 1
    # every measured run's client CPU per item (`cpu_seconds` is their least): their spread is the
    # machine's load, printed beside the figure
    cpu_seconds_runs: tuple[float, ...] = ()

    @property
    def items_per_transaction(self) -> int:
        return max(1, MAX_ITEM_ACTIONS // max(1, self.actions_per_item))

    @property
    def total_wcu(self) -> float:
        return sum(self.table_wcu.values()) + sum(self.index_wcu.values())


@dataclass(frozen=True, slots=True)
class Night:
    """What the night asks of DynamoDB and Lambda."""

    items: int
    workers: int  # the worker's MaximumConcurrency, equal to the partitions (rule shards-match-concurrency)
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
    # the items of each index shard key, when known; None: a hash spread over `keys` keys
    partition_items: Sequence[int] = field(default_factory=tuple)
    # time outside the writes (the coordinator's claim and fan-out), when measured
    fixed_seconds: float = 0.0
    # the index shard keys the job writes (0: one per worker); worker w reads, one after the other,
    # the keys k with k % workers == w (clockless.dynamo.partition_keys)
    keys: int = 0
    # the worker of each entry of `partition_items`, when known (as seeded); empty: entry i's is i % workers
    key_workers: Sequence[int] = field(default_factory=tuple)
    # on-demand growth modelled: every 30 minutes a ceiling doubles to the peak before, each of its
    # partitions split in two (False: the night holds at its starting ceilings, as the targets do)
    growth: bool = True

    def __post_init__(self) -> None:
        if self.items <= 0 or self.workers <= 0 or self.tenants <= 0 or self.memory_mb <= 0 or self.scale <= 0:
            raise ValueError(f"a night needs positive items, workers, tenants, memory and scale: {self}")
        if self.keys and self.keys < self.workers:
            raise ValueError(f"a night needs at least one key per worker: {self.keys} keys, {self.workers} workers")
        if self.key_workers and len(self.key_workers) != len(self.partition_items):
            raise ValueError(f"a night's key_workers name the worker of each partition_items entry: {self}")


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the night's keys fall in the hash space [0, 1)."""

    tenant_keys: tuple[float, ...]  # each key value of the tenant table (tenants x buckets)
    shard_keys: tuple[float, ...]  # each shard key on the shard index, in the order of the shards' items
    # each tenant key's share of the items, when known (as seeded); empty: equal shares
    tenant_shares: tuple[float, ...] = ()
    # per shard (in the order of `shard_keys`), its items on each tenant key (in the order of
    # `tenant_keys`), when known (as seeded): bench/lumps.py makes each worker's transactions of them
    shard_tenant_items: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class Prediction:
    seconds: float
    bound: str  # the limit that bound the longest
    fleet_bounds: dict[str, float]  # items/s at the start, by limit ("shard keys": all workers together)
    worker_rate: float  # items/s one worker can go on its own shard key
    slowest_partition: int
    growth_steps: int  # times a ceiling doubled during the night
    binding: dict[str, float]  # seconds each limit bound

    @property
    def kind(self) -> str:
        """What kind of limit bound: tenant keys, GSI shard keys, ledger key, on-demand, ..."""
        return self.bound.split(":")[0]


@dataclass(frozen=True, slots=True)
class Spread:
    """A night over many placements of its keys."""

    expected: float
    p95: float
    at_p95: Prediction
    samples: int
    kinds: dict[str, float]  # the share of placements each kind of limit bound
    placement_at_p95: Placement  # where the keys fell at the p95 (bench/lumps.py runs it in transactions)


def slowest_partition(items: int, shards: int) -> int:
    """The largest of `shards` hash partitions of `items`: mean + 3 standard deviations."""
    mean = items / shards
    return min(items, math.ceil(mean + 3 * math.sqrt(mean * (1 - 1 / shards))))


def worker_supply(cost: ItemCost, memory_mb: int) -> float:
    """Items/s one worker's CPU share offers (Lambda: one thread's share of its memory's vCPU)."""
    return min(1.0, memory_mb / VCPU_MB) / cost.cpu_seconds if cost.cpu_seconds > 0 else math.inf


def shard_items(night: Night) -> list[float]:
    """The items of each index shard key: as measured, or a hash spread with its largest at
    mean + 3 sd."""
    if night.partition_items:
        return [float(n) for n in night.partition_items]
    shards = night.keys or min(night.workers, ACCOUNT_CONCURRENCY)
    largest = slowest_partition(night.items, shards)
    rest = (night.items - largest) / (shards - 1) if shards > 1 else 0.0
    return [float(largest), *([rest] * (shards - 1))]


def key_workers(night: Night) -> list[int]:
    """The worker that reads each entry of `shard_items` (its keys one after the other, in order)."""
    if night.key_workers:
        return list(night.key_workers)
    workers = min(night.workers, ACCOUNT_CONCURRENCY)
    return [i % workers for i in range(len(shard_items(night)))]


def _reading(remaining: Sequence[float], workers: Sequence[int]) -> list[int]:
    """The key each worker is on: its first with items left (a worker reads its keys in turn)."""
    current: dict[int, int] = {}
    for i, left in enumerate(remaining):
        if left > _DONE and workers[i] not in current:
            current[workers[i]] = i
    return sorted(current.values())


def even_placement(cost: ItemCost, night: Night) -> Placement:
    """Every key on a partition of its own, as far as the partitions go: the best placement."""
    tenant_keys = night.tenants * cost.tenant_buckets
    shards = len(shard_items(night))
    return Placement(
        tuple((i + 0.5) / tenant_keys for i in range(tenant_keys)), tuple((i + 0.5) / shards for i in range(shards))
    )


def random_placement(cost: ItemCost, night: Night, rng: random.Random) -> Placement:
    tenant_keys = night.tenants * cost.tenant_buckets
    shards = len(shard_items(night))
    return Placement(tuple(rng.random() for _ in range(tenant_keys)), tuple(rng.random() for _ in range(shards)))


def starting_ceilings(cost: ItemCost, night: Night) -> dict[str, float]:
    """Write units/s each table and index serves from the start of the night (scaled)."""
    warm = night.warm or {}
    return {
        name: min(TABLE_QUOTA_WCU, max(NEW_WCU, warm.get(name, NEW_WCU))) / night.scale
        for name in [*cost.table_wcu, *cost.index_wcu]
    }


def _partitions(ceiling: float, scale: float, count: int | None = None) -> HashRanges:
    """The partitions of a table or index at `ceiling`: the least count that serves it, or `count`
    when growth has split them (each in two, so no key leaves the range that holds it)."""
    return HashRanges(count or partitions_for(ceiling * scale, NEW_RCU))


def _split(count: int, ceiling: float, scale: float) -> int:
    """The partitions after growth to `ceiling`: each of `count` split in two until they serve it."""
    while count * PARTITION_WCU < ceiling * scale * (1 - 1e-9):
        count *= 2
    return count


def _water_fill(caps: Sequence[float], total: float) -> list[float]:
    """Fair shares of `total` under each cap (what AIMD workers sharing one limit converge to)."""
    if sum(caps) <= total:
        return list(caps)
    rates = [0.0] * len(caps)
    left, order = total, sorted(range(len(caps)), key=lambda i: caps[i])
    for position, i in enumerate(order):
        share = left / (len(order) - position)
        rates[i] = min(caps[i], share)
        left -= rates[i]
    return rates


def _fleet_bounds(
    cost: ItemCost,
    night: Night,
    placement: Placement,
    ceilings: Mapping[str, float],
    fixed: Mapping[str, float],
    *,
    counts: Mapping[str, int] | None = None,
) -> dict[str, float]:
    key = PARTITION_WCU / night.scale
    units = {**cost.table_wcu, **cost.index_wcu}
    bounds = dict(fixed)
    for name, ceiling in ceilings.items():
        if not units[name]:
            continue
        bounds[f"on-demand: {name}"] = ceiling / units[name]
        ranges = _partitions(ceiling, night.scale, (counts or {}).get(name))
        if name == cost.tenant_table:
            keys = {str(i): place for i, place in enumerate(placement.tenant_keys)}
            given = placement.tenant_shares
            shares = {k: given[i] if given else 1 / len(keys) for i, k in enumerate(keys)}
            index, share = busiest(partition_loads(keys, shares, ranges))
            held = sum(1 for place in keys.values() if ranges.index(place) == index)
            label = f"tenant keys: {held} of {len(keys)} on one {name} partition (of {len(ranges)})"
            bounds[label] = key / (units[name] * share)
        elif name != cost.shard_index and len(ranges) > 1:
            share = slowest_partition(night.items, len(ranges)) / night.items
            bounds[f"spread keys: the busiest {name} partition (of {len(ranges)})"] = key / (units[name] * share)
    return bounds


def predict(cost: ItemCost, night: Night, placement: Placement | None = None) -> Prediction:
    """The night for one placement of its keys (None: the even one), run forward in time."""
    placement = placement or even_placement(cost, night)
    key = PARTITION_WCU / night.scale
    per_worker = worker_supply(cost, night.memory_mb) if night.worker_supply is None else night.worker_supply
    shard_wcu = cost.index_wcu.get(cost.shard_index, 0.0)
    paced = cost.paced_units or shard_wcu
    own = min(per_worker, key / paced if paced else math.inf)
    own_name = "Lambda supply: each worker's CPU" if per_worker <= own else "GSI shard key: each worker's own"
    remaining = shard_items(night)
    readers = key_workers(night)
    workers = min(len(set(readers)), ACCOUNT_CONCURRENCY)
    fixed = {"Lambda supply": workers * per_worker if night.supply is None else night.supply}
    if cost.work_key_wcu:
        fixed["ledger key: the job's work records"] = key / cost.work_key_wcu
    ceilings = starting_ceilings(cost, night)
    counts = {name: partitions_for(ceiling * night.scale, NEW_RCU) for name, ceiling in ceilings.items()}
    units = {**cost.table_wcu, **cost.index_wcu}
    # what bound each worker, step by step: the night ends with its last worker, so the limit named
    # is the one that held that worker longest (`Prediction.bound`)
    history: list[tuple[float, dict[int, str]]] = []
    start_bounds: dict[str, float] = {}
    now, steps, window_end = 0.0, 0, GROWTH_SECONDS if night.growth else math.inf
    peaks = dict.fromkeys(ceilings, 0.0)  # the highest write units/s on each, this window
    last_worker = readers[0] if readers else 0
    while any(left > _DONE for left in remaining):
        fleet = _fleet_bounds(cost, night, placement, ceilings, fixed, counts=counts)
        fleet_name = min(fleet, key=lambda n: fleet[n])
        active = _reading(remaining, readers)
        caps, cap_names = _shard_caps(
            cost, night, placement, ceilings, active, own=own, own_name=own_name, counts=counts
        )
        rates = _water_fill(caps, fleet[fleet_name])
        if not start_bounds:
            start_bounds = {**fleet, "shard keys": sum(caps)}
        finish = [remaining[i] / rate for i, rate in zip(active, rates, strict=True) if rate > 0]
        step = min(min(finish, default=math.inf), window_end - now)
        fleet_limited = sum(rates) < sum(caps) * (1 - 1e-9)
        history.append(
            (step, {readers[i]: fleet_name if fleet_limited else cap_names[j] for j, i in enumerate(active)})
        )
        last_worker = readers[active[0]]  # the last step's: the worker that ends the night
        for i, rate in zip(active, rates, strict=True):
            remaining[i] = max(0.0, remaining[i] - rate * step)
        for name in ceilings:
            peaks[name] = max(peaks[name], sum(rates) * units[name])
        now += step
        if now >= window_end - 1e-9:
            grown = False
            for name, ceiling in ceilings.items():
                ceilings[name] = max(ceiling, min(TABLE_QUOTA_WCU / night.scale, 2 * peaks[name]))
                counts[name] = _split(counts[name], ceilings[name], night.scale)
                grown = grown or ceilings[name] > ceiling * (1 + 1e-9)
            steps += grown
            window_end += GROWTH_SECONDS
    binding: defaultdict[str, float] = defaultdict(float)
    for step, names in history:
        if last_worker in names:
            binding[names[last_worker]] += step
    bound = max(binding, key=lambda n: binding[n])
    largest = int(max(shard_items(night)))
    return Prediction(now + night.fixed_seconds, bound, start_bounds, own, largest, steps, dict(binding))


def _shard_caps(
    cost: ItemCost,
    night: Night,
    placement: Placement,
    ceilings: Mapping[str, float],
    active: Sequence[int],
    *,
    own: float,
    own_name: str,
    counts: Mapping[str, int] | None = None,
) -> tuple[list[float], list[str]]:
    """Each active shard's own limit: its worker, and its share of its index partition."""
    shard_wcu = cost.index_wcu.get(cost.shard_index, 0.0)
    if not shard_wcu or cost.shard_index not in ceilings:
        return [own] * len(active), [own_name] * len(active)
    ranges = _partitions(ceilings[cost.shard_index], night.scale, (counts or {}).get(cost.shard_index))
    where = [ranges.index(placement.shard_keys[i]) for i in active]
    sharing = {q: where.count(q) for q in set(where)}
    caps, names = [], []
    for q in where:
        share = PARTITION_WCU / night.scale / (shard_wcu * sharing[q])
        if share < own:
            caps.append(share)
            names.append(
                f"GSI shard keys: {sharing[q]} of {len(placement.shard_keys)} on one {cost.shard_index} "
                f"partition (of {len(ranges)})"
            )
        else:
            caps.append(own)
            names.append(own_name)
    return caps, names


def over_placements(cost: ItemCost, night: Night, samples: int = PLACEMENTS, seed: int = 0) -> Spread:
    """The night over `samples` random placements of its keys: expected time, p95, what binds."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible sample of placements, not a secret
    placements = [random_placement(cost, night, rng) for _ in range(samples)]
    ranked = sorted(((predict(cost, night, p), p) for p in placements), key=lambda pair: pair[0].seconds)
    predictions = [prediction for prediction, _ in ranked]
    at_p95, placement_at_p95 = ranked[max(0, math.ceil(PERCENTILE * samples) - 1)]
    kinds: defaultdict[str, float] = defaultdict(float)
    for prediction in predictions:
        kinds[prediction.kind] += 1 / samples
    return Spread(
        expected=sum(p.seconds for p in predictions) / samples,
        p95=at_p95.seconds,
        at_p95=at_p95,
        samples=samples,
        kinds=dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        placement_at_p95=placement_at_p95,
    )


@dataclass(frozen=True, slots=True)
class Floor:
    """The least time the declared throughput allows: every table's and index's write units of the
    night at its ceiling from the first second, nothing else in the way."""

    seconds: float
    binding: str  # the table or index whose ceiling sets it
    by_table: dict[str, float]  # seconds each table's and index's ceiling alone needs


def floor(cost: ItemCost, night: Night) -> Floor:
    """items x counted write units per item / write units per second the table serves from the
    start (the declared WarmThroughput, or a new on-demand table's), per table and index; the
    tightest binds. The kit's own tables (its records on a few keys) are left out, as bookkeeping."""
    units = {**cost.table_wcu, **cost.index_wcu}
    by_table = {
        name: night.items * units[name] / ceiling
        for name, ceiling in starting_ceilings(cost, night).items()
        if units[name] and name.partition("/")[0] not in cost.bookkeeping
    }
    binding = max(by_table, key=lambda name: by_table[name])
    return Floor(by_table[binding], binding, by_table)


def declared_for(cost: ItemCost, items_per_second: float) -> dict[str, float]:
    """The WarmThroughput each table and index needs to take `items_per_second` (whole units)."""
    units = {**cost.table_wcu, **cost.index_wcu}
    return {name: float(math.ceil(items_per_second * wcu)) for name, wcu in units.items() if wcu}
