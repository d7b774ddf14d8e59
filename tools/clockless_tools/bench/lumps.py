"""The night in whole transactions: the model of bench/model.py, with each transaction a lump.

bench/model.py runs the night as a fluid: every partition serves its share at its rate, and
nothing is lost between two requests. That holds when a transaction is small next to what a
partition serves in a second: a 99-item transaction puts at most 198 write units on a key, a
fifth of a partition's 1,000 per second. It does not hold for the night the capacity check
runs on the emulator: limits divided by the scale S, the same 99-item transactions are S times
larger next to a partition's second, and a worker's whole share is one or two transactions
(with 16 workers each transaction is a sixteenth of the night on the partition that binds).
Three things then cost time the fluid does not count, each a rule DynamoDB and the kit follow:

- a transaction is admitted whole or not at all: it waits until every partition it writes
  to has capacity, and pays for all of them at once (the emulator, `local/capacity.py`);
- a partition keeps at most one second of unused capacity, so the partitions a transaction
  does not wait for lose what they cannot keep while it waits for the others;
- a refused transaction comes back after the kit's backoff (`clockless.throttle`: full jitter,
  50 ms doubling per throttle, capped at 5 s), so a partition that has capacity again can stay
  idle until the next transaction comes back.

So this runs the night as its transactions: each worker reads its shard's pages, packs each
page into transactions of at most 99 items sent in up to `lanes` lanes, and each transaction
puts its units on every partition it touches, as the model places the keys: the tenant table's
partitions by the tenant keys' shares (or by each shard's items as seeded, when known), the
worker's own shard key's index partition, every other table's partitions by a hash spread (its
busiest at mean + 3 standard deviations, as the fluid model takes it), the job's ledger key (the
kit's own tables are records on a few keys: only that key and their ceilings), and each table's
and index's ceiling (with its 300 s of burst). Each partition run also claims and completes its
partition on the tick's own ledger entry and on its partition record under the job's ledger key
(two keys every run writes, in one transaction each time: a fixed cost per run, which at limits /
S is seconds of those keys at the start and the end of the night, more of it the more shards; the
ledger key's per-item charge is then the lanes' counters alone). Each worker's
transactions go out through the kit's own `Pacer` (on a simulated clock: halved on each
throttle, raised after each success). A
transaction is admitted when every bucket it lands on has capacity left, else it comes back
after the kit's backoff. The backoff is random: `granular` runs the night `seeds` times and
gives the mean and the range. With small transactions and a pacer that never slows a worker it
gives the fluid model's time (tests/unit/test_bench_lumps.py); it is what the capacity check
compares the emulator with.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from clockless.fanout.pacing import Pacer, PacingSettings
from clockless.fanout.settings import (
    DEFAULT_CONCURRENCY,
    DEFAULT_KEY_WRITE_UNITS_PER_SECOND,
    DEFAULT_MIN_WRITE_UNITS_PER_SECOND,
    DEFAULT_PAGE_SIZE,
    DEFAULT_RATE_INCREASE_UNITS,
)
from clockless.fanout.writer import MAX_ITEM_ACTIONS
from clockless.throttle import BACKOFF_BASE_SECONDS, THROTTLE_BACKOFF_CAP_SECONDS
from clockless_tools.bench.model import (
    PARTITION_WCU,
    ItemCost,
    Night,
    Placement,
    even_placement,
    key_workers,
    shard_items,
    slowest_partition,
    starting_ceilings,
    worker_supply,
)
from clockless_tools.local.partitions import BURST_SECONDS, PARTITION_BUCKET_SECONDS, HashRanges, partitions_for

SEEDS: Final = 12
# The kit's pacing as template.yaml leaves it (for DynamoDB's real 1,000 units per key).
KIT_PACING: Final = PacingSettings(
    DEFAULT_KEY_WRITE_UNITS_PER_SECOND, DEFAULT_MIN_WRITE_UNITS_PER_SECOND, DEFAULT_RATE_INCREASE_UNITS
)
_LEDGER: Final = "ledger key"
_TICK: Final = "tick key"


@dataclass
class _Bucket:
    """Units per second, at most `depth` seconds of them kept; admitted while positive."""

    rate: float
    depth: float
    level: float
    updated: float = 0.0

    def at(self, now: float) -> float:
        self.level = min(self.rate * self.depth, self.level + (now - self.updated) * self.rate)
        self.updated = now
        return self.level


@dataclass(frozen=True, slots=True)
class Granular:
    """The night in whole transactions, over `seeds` draws of the kit's backoff."""

    seconds: float  # the mean, with the coordinator's time
    low: float
    high: float
    transactions: int  # transactions one night sends, resends not counted
    refusals: float  # transactions refused per night, on average
    draws: int = SEEDS  # nights run, each with its own draw of the backoff


Batch = tuple[tuple[int, int], ...]  # one transaction: (index shard key, its items) for each key in it


@dataclass
class _Lane:
    worker: int
    batches: list[Batch]  # each transaction left, in order
    throttles: int = 0
    charges: dict[str, float] | None = None  # the current transaction's units on each bucket
    sending: bool = False  # the pacer has let the current transaction go
    ledger: str = ""  # "claim" or "done": the partition run's write on the tick's ledger entry


def _batches(items: int, page_size: int, per_transaction: int = MAX_ITEM_ACTIONS) -> Iterator[list[int]]:
    """Each page's transactions (items in each), as the kit packs them: `per_transaction` items
    (MAX_ITEM_ACTIONS // the item's actions: 49 for window generation, 99 for session cleanup),
    then the rest."""
    left = items
    while left > 0:
        page = min(page_size, left)
        left -= page
        full, rest = divmod(page, per_transaction)
        yield [per_transaction] * full + ([rest] if rest else [])


def _worker_pages(
    keys: list[tuple[int, int]], page_size: int, per_transaction: int = MAX_ITEM_ACTIONS
) -> Iterator[list[Batch]]:
    """A worker's pages over its keys, each `(key, items)` in the order it reads them: a page goes
    on into the next key when one ends short (clockless.dynamo.keys_page), and each page is packed
    into transactions as `_batches` packs one of `page_size` items."""
    page: list[tuple[int, int]] = []  # (key, items) runs of the page being filled
    filled = 0
    for key, items in keys:
        left = items
        while left > 0:
            taken = min(left, page_size - filled)
            page.append((key, taken))
            filled, left = filled + taken, left - taken
            if filled == page_size:
                yield _packed(page, page_size, per_transaction)
                page, filled = [], 0
    if filled:
        yield _packed(page, page_size, per_transaction)


def _packed(runs: list[tuple[int, int]], page_size: int, per_transaction: int) -> list[Batch]:
    """A page's runs of items by key, cut into its transactions (`_batches`)."""
    batches: list[Batch] = []
    runs = list(runs)
    for size in next(_batches(sum(items for _, items in runs), page_size, per_transaction)):
        parts: list[tuple[int, int]] = []
        wanted = size
        while wanted:
            key, items = runs[0]
            taken = min(items, wanted)
            parts.append((key, taken))
            wanted -= taken
            if taken == items:
                runs.pop(0)
            else:
                runs[0] = (key, items - taken)
        batches.append(tuple(parts))
    return batches


def _items(batch: Batch) -> int:
    return sum(items for _, items in batch)


def _spread(ranges: int, items: int) -> list[float]:
    """The share of the items on each partition of a table whose keys are many: the busiest at
    mean + 3 sd (as the fluid model takes it), the others alike."""
    if ranges <= 1:
        return [1.0]
    busiest = slowest_partition(max(items, 1), ranges) / max(items, 1)
    return [busiest] + [(1 - busiest) / (ranges - 1)] * (ranges - 1)


@dataclass(frozen=True, slots=True)
class _Spread:
    """A table whose items fall on its partitions by hash: each transaction's items are a draw."""

    partitions: tuple[str, ...]
    weights: tuple[float, ...]
    units: float  # per item


@dataclass(frozen=True, slots=True)
class _Charges:
    """What one item of a worker puts on each bucket: `fixed` every item alike, `spread` drawn."""

    fixed: dict[str, float]
    spread: tuple[_Spread, ...]

    def of(self, items: int, rng: random.Random) -> dict[str, float]:
        """One transaction's units on each bucket."""
        charges = {name: units * items for name, units in self.fixed.items()}
        for table in self.spread:
            for name in rng.choices(table.partitions, weights=table.weights, k=items):
                charges[name] = charges.get(name, 0.0) + table.units
        return charges


def _charges(cost: ItemCost, night: Night, placement: Placement) -> tuple[list[_Charges], dict[str, _Bucket]]:
    """Per index shard key (each entry of `shard_items`), what its items put on each bucket; and the
    buckets, full at the start."""
    key = PARTITION_WCU / night.scale
    units = {**cost.table_wcu, **cost.index_wcu}
    buckets: dict[str, _Bucket] = {}
    fixed: dict[str, float] = {}
    spread: list[_Spread] = []
    shard_partition: dict[int, str] = {}
    exact: dict[int, dict[str, float]] = {}  # worker -> units per item on each tenant partition, as seeded
    workers = len(shard_items(night))
    for name, ceiling in starting_ceilings(cost, night).items():
        if not units[name]:
            continue
        buckets[name] = _Bucket(ceiling, max(1.0, BURST_SECONDS), ceiling * min(BURST_SECONDS, 1.0))
        fixed[name] = units[name]
        ranges = HashRanges(partitions_for(ceiling * night.scale, 0.0))
        if name == cost.shard_index:
            for worker in range(workers):
                shard_partition[worker] = f"{name}#{ranges.index(placement.shard_keys[worker])}"
            continue
        if name == cost.tenant_table:
            drawn, exact = _tenant_charges(name, units[name], ranges, placement)
            spread += drawn
        elif name.partition("/")[0] not in cost.bookkeeping:
            names = tuple(f"{name}#{index}" for index in range(len(ranges)))
            spread.append(_Spread(names, tuple(_spread(len(ranges), night.items)), units[name]))
    if cost.work_key_wcu:
        fixed[_LEDGER] = cost.work_key_wcu
    per_worker = []
    for worker in range(workers):
        mine = {**fixed, **exact.get(worker, {})}
        if worker in shard_partition:
            mine[shard_partition[worker]] = units[cost.shard_index]
        per_worker.append(_Charges(mine, tuple(spread)))
    partitions = {name for charges in per_worker for name in charges.fixed} - set(buckets)
    partitions |= {name for table in spread for name in table.partitions}
    for name in partitions:
        buckets[name] = _Bucket(key, PARTITION_BUCKET_SECONDS, key * PARTITION_BUCKET_SECONDS)
    return per_worker, buckets


def _tenant_charges(
    table: str, units: float, ranges: HashRanges, placement: Placement
) -> tuple[list[_Spread], dict[int, dict[str, float]]]:
    """The tenant table's partitions: drawn by the tenant keys' shares, or, when the items of each
    shard are known as seeded, each worker's units per item on each partition."""
    where = [f"{table}#{ranges.index(place)}" for place in placement.tenant_keys]
    exact: dict[int, dict[str, float]] = {}
    if placement.shard_tenant_items:
        for worker, counts in enumerate(placement.shard_tenant_items):
            total = sum(counts) or 1
            mine = exact.setdefault(worker, {})
            for partition, count in zip(where, counts, strict=True):
                if count:
                    mine[partition] = mine.get(partition, 0.0) + units * count / total
        return [], exact
    given = placement.tenant_shares
    weights: dict[str, float] = {}
    for i, partition in enumerate(where):
        weights[partition] = weights.get(partition, 0.0) + (given[i] if given else 1.0)
    return [_Spread(tuple(weights), tuple(weights.values()), units)], exact


class _SimulatedClock:
    """The night's time for the kit's own pacer: what it would sleep is added up, not slept."""

    def __init__(self) -> None:
        self.time = 0.0
        self.slept = 0.0

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.slept += max(0.0, seconds)


class _Night:
    """One night, event by event: each lane's pacer wait, then its send, admitted or refused."""

    def __init__(
        self,
        cost: ItemCost,
        night: Night,
        placement: Placement,
        rng: random.Random,
        *,
        lanes: int,
        page_size: int,
        pacing: PacingSettings,
    ) -> None:
        self.per_worker, self.buckets = _charges(cost, night, placement)
        # each run's claim and done: on the tick's entry, and its partition record on the job's work key
        self.run_charges = {
            name: units / 2
            for name, units in ((_TICK, cost.tick_key_wcu_per_run), (_LEDGER, cost.work_key_wcu_per_run))
            if units
        }
        key = PARTITION_WCU / night.scale
        for name in self.run_charges:
            self.buckets.setdefault(name, _Bucket(key, PARTITION_BUCKET_SECONDS, key * PARTITION_BUCKET_SECONDS))
        self.supply = worker_supply(cost, night.memory_mb) if night.worker_supply is None else night.worker_supply
        self.paced = cost.paced_units or cost.index_wcu.get(cost.shard_index, 0.0)
        # each worker's pages over its keys, one after the other (clockless.dynamo.keys_page)
        readers = key_workers(night)
        keys: list[list[tuple[int, int]]] = [[] for _ in range(max(readers, default=-1) + 1)]
        for key, (items, worker) in enumerate(zip(shard_items(night), readers, strict=True)):
            keys[worker].append((key, round(items)))
        self.pages = [list(_worker_pages(mine, page_size, cost.items_per_transaction)) for mine in keys]
        self.rng = rng
        self.lanes = lanes
        self.clock = _SimulatedClock()
        # each worker's pacer, the kit's own, shared by its lanes (new workers: it starts at its ceiling)
        self.pacers = [Pacer(pacing, self.clock) for _ in self.pages]
        self.queue: list[tuple[float, int, _Lane]] = []  # (time, order, lane): a lane's next step
        self.order = 0
        self.running: dict[int, int] = {}  # worker -> lanes still on its current page
        self.end, self.sent, self.refused = 0.0, 0, 0

    def push(self, time: float, lane: _Lane) -> None:
        self.order += 1
        heapq.heappush(self.queue, (time, self.order, lane))

    def ledger_write(self, worker: int, now: float, which: str) -> bool:
        """The run's claim or completion on the ledger (its tick's entry and its partition record),
        when it costs anything: one transaction, admitted when both keys have capacity."""
        if not self.run_charges:
            return False
        self.push(now, _Lane(worker, [()], charges=dict(self.run_charges), ledger=which))
        return True

    def start_page(self, worker: int, now: float) -> None:
        if not self.pages[worker]:
            self.ledger_write(worker, now, "done")
            return
        page = self.pages[worker].pop(0)
        ready = now + sum(map(_items, page)) / self.supply if self.supply > 0 else now
        count = min(self.lanes, len(page))
        self.running[worker] = count
        for lane in range(count):
            self.push(ready, _Lane(worker, page[lane::count]))

    def run(self) -> tuple[float, int, int]:
        """Its seconds (without the coordinator's), transactions, refusals."""
        for worker in range(len(self.pages)):
            if not self.ledger_write(worker, 0.0, "claim"):
                self.start_page(worker, 0.0)
        while self.queue:
            now, _, lane = heapq.heappop(self.queue)
            self.clock.time, self.clock.slept = now, 0.0
            if lane.sending:
                self.send(now, lane)
                continue
            if self.paced:
                self.pacers[lane.worker].take(_items(lane.batches[0]) * self.paced)
            lane.sending = True
            self.push(now + self.clock.slept, lane)
        return self.end, self.sent, self.refused

    def send(self, now: float, lane: _Lane) -> None:
        """The lane's transaction, admitted whole when every bucket it lands on has capacity."""
        lane.sending = False
        pacer = self.pacers[lane.worker]
        if lane.charges is None:
            lane.charges = {}
            for key, items in lane.batches[0]:
                for name, units in self.per_worker[key].of(items, self.rng).items():
                    lane.charges[name] = lane.charges.get(name, 0.0) + units
        if not all(self.buckets[name].at(now) > 0 for name in lane.charges):
            self.refused += 1
            pacer.throttled()
            cap = min(THROTTLE_BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**lane.throttles)
            lane.throttles += 1
            self.push(now + self.rng.uniform(0, cap), lane)
            return
        for name, units in lane.charges.items():
            self.buckets[name].level -= units
        pacer.succeeded()
        lane.charges, lane.throttles = None, 0
        self.sent += not lane.ledger
        self.end = max(self.end, now)
        lane.batches.pop(0)
        if lane.ledger:
            if lane.ledger == "claim":
                self.start_page(lane.worker, now)
            return
        if lane.batches:
            self.push(now, lane)
            return
        self.running[lane.worker] -= 1
        if not self.running[lane.worker]:
            self.start_page(lane.worker, now)


def granular(
    cost: ItemCost,
    night: Night,
    placement: Placement | None = None,
    *,
    seeds: int = SEEDS,
    page_size: int = DEFAULT_PAGE_SIZE,
    lanes: int = DEFAULT_CONCURRENCY,
    pacing: PacingSettings = KIT_PACING,
) -> Granular:
    """The night as its transactions, `seeds` times (seeded: reproducible), the mean and range."""
    placement = placement or even_placement(cost, night)
    runs = [
        _Night(cost, night, placement, random.Random(seed), lanes=lanes, page_size=page_size, pacing=pacing).run()  # noqa: S311
        for seed in range(seeds)
    ]
    seconds = [run[0] + night.fixed_seconds for run in runs]
    return Granular(
        seconds=sum(seconds) / len(seconds),
        low=min(seconds),
        high=max(seconds),
        transactions=runs[0][1],
        refusals=sum(run[2] for run in runs) / len(runs),
        draws=seeds,
    )
