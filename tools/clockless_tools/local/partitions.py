"""Physical partitions: how many a table or index has, where a key value lands, what each serves.

AWS does not publish how DynamoDB partitions a table; it publishes what one partition serves, and
that key values are placed by a hash of the partition key:

- "every partition in a DynamoDB table is designed to deliver a maximum capacity of 3,000 read
  units per second and 1,000 write units per second" (developer guide, "Best practices for
  designing and using partition keys effectively"; the same for each global secondary index,
  "Key range throughput exceeded (hot partitions)"), and a partition holds about 10 GB ("Partitions
  and data distribution");
- DynamoDB "retains up to five minutes (300 seconds) of unused read and write capacity" as burst
  capacity, which "can't alleviate partition-level throttling" ("DynamoDB burst and adaptive
  capacity"; re:Post "dynamodb-spiky-workloads-short-intervals");
- adaptive capacity *may* split a partition that stays hot ("split for heat", "isolate frequently
  accessed items"), with no published timing, and never serves one key value past a partition's
  limits.

So a table or index whose throughput (warm, provisioned, or on-demand as it has grown) is W write
and R read units per second and whose items take B bytes has at least

    partitions = max(ceil(W / 1,000), ceil(R / 3,000), ceil(B / 10 GB), 1)

physical partitions: fewer could not serve what AWS sells. The emulator and the model take that
least count (an older talk's `R / 3,000 + W / 1,000` gives more partitions, so fewer collisions:
the least count is the cautious reading). A key value's place is the md5 of its attribute value
as sent on the wire, read as a fraction of the hash space [0, 1); partition i of n holds
[i / n, (i + 1) / n). When the throughput grows past what the partitions serve, every partition is
halved (a key never moves to a partition that does not cover its hash), and split for heat cuts one
partition at the median of its keys' places, so two hot keys part.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

PARTITION_WRITE_UNITS: Final = 1_000.0
PARTITION_READ_UNITS: Final = 3_000.0
PARTITION_BYTES: Final = 10 * 1024**3
BURST_SECONDS: Final = 300.0
# A partition's bucket holds this many seconds of its rate: enough for one request to pass, no burst.
PARTITION_BUCKET_SECONDS: Final = 1.0


def partitions_for(write_units: float, read_units: float, size_bytes: float = 0.0) -> int:
    """The least number of physical partitions that serve `write_units` and `read_units` per
    second and hold `size_bytes` (DynamoDB's figures, unscaled)."""
    needed = (
        write_units / PARTITION_WRITE_UNITS,
        read_units / PARTITION_READ_UNITS,
        size_bytes / PARTITION_BYTES,
    )
    # a hair under a whole number is that number: 4,000.0000001 units need 4 partitions, not 5
    return max(1, *(math.ceil(value - 1e-9) for value in needed))


def canonical(value: Any) -> str:
    """A key attribute's value as the emulator names it: its wire form, keys sorted."""
    return json.dumps(value, sort_keys=True)


def key_place(key: str) -> float:
    """Where a key value (its `canonical` text) falls in the hash space [0, 1)."""
    digest = hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def string_key_place(value: str) -> float:
    """The place of a string key value (`{"S": value}` on the wire)."""
    return key_place(canonical({"S": value}))


class HashRanges:
    """A resource's partitions as ranges of the hash space: equal slices to begin with, every
    slice halved as the resource grows, one slice cut where split for heat cuts it."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"a table or index has at least one partition, got {count}")
        self.cuts = [i / count for i in range(1, count)]

    def __len__(self) -> int:
        return len(self.cuts) + 1

    def index(self, place: float) -> int:
        return bisect.bisect_right(self.cuts, place)

    def grow_to(self, count: int) -> bool:
        """Halve every partition until there are at least `count`; whether any was halved."""
        grown = False
        while len(self) < count:
            edges = [0.0, *self.cuts, 1.0]
            self.cuts = sorted({*self.cuts, *((low + high) / 2 for low, high in itertools.pairwise(edges))})
            grown = True
        return grown

    def split(self, index: int, places: Iterable[float]) -> bool:
        """Cut partition `index` between its keys (at their median place); False when fewer
        than two keys are on it (one key value is one partition's, whatever its heat)."""
        ordered = sorted({place for place in places if self.index(place) == index})
        if len(ordered) < 2:
            return False
        middle = len(ordered) // 2
        bisect.insort(self.cuts, (ordered[middle - 1] + ordered[middle]) / 2)
        return True


def busiest(loads: Mapping[int, float]) -> tuple[int, float]:
    """The partition with the largest load, and that load (0, 0.0 when none)."""
    if not loads:
        return 0, 0.0
    index = max(loads, key=lambda i: (loads[i], -i))
    return index, loads[index]


def partition_loads(places: Mapping[str, float], shares: Mapping[str, float], ranges: HashRanges) -> dict[int, float]:
    """Each partition's share of the load: the shares of the keys placed on it."""
    loads: dict[int, float] = {}
    for key, share in shares.items():
        index = ranges.index(places[key])
        loads[index] = loads.get(index, 0.0) + share
    return loads


@dataclass(frozen=True, slots=True)
class Throughput:
    """Write and read units per second (DynamoDB's figures, unscaled)."""

    write: float
    read: float

    def __post_init__(self) -> None:
        if not (self.write > 0 and self.read > 0):
            raise ValueError(f"throughput must be positive write and read units per second, got {self}")


PARTITION: Final = Throughput(PARTITION_WRITE_UNITS, PARTITION_READ_UNITS)  # what one partition serves


@dataclass
class TokenBucket:
    """Units per second, refilled continuously, at most `depth` seconds of them stored. A request
    is admitted while the level is positive and then pays its whole cost (the level may go below
    zero), so a request larger than what a second holds is slowed, never refused forever."""

    rate: float
    updated: float
    depth: float = PARTITION_BUCKET_SECONDS
    level: float = field(default=math.nan)

    def __post_init__(self) -> None:
        if math.isnan(self.level):
            self.level = self.rate * min(self.depth, PARTITION_BUCKET_SECONDS)

    def refill(self, now: float) -> float:
        self.level = min(self.rate * self.depth, self.level + max(0.0, now - self.updated) * self.rate)
        self.updated = now
        return self.level


@dataclass(frozen=True, slots=True)
class Limits:
    """What a table or index serves (DynamoDB's figures, unscaled), and the scale dividing them."""

    start: Throughput  # from the start: on-demand's new-table rate, the warm or the provisioned throughput
    quota: Throughput  # on-demand: the per-table quota; provisioned: the provisioned throughput
    fixed: bool  # provisioned: the start never grows
    scale: float = 1.0
    size_bytes: float = 0.0
    growth_seconds: float = 1_800.0
    burst_seconds: float = BURST_SECONDS
    partition: Throughput = PARTITION


class Ceiling:
    """One direction (write or read) of a table or index as a whole: its current throughput, which
    on demand grows to double a peak held at least `growth_seconds` ago (re:Post "on-demand table
    throttling"), up to its quota; and what it consumed (scaled units)."""

    def __init__(self, start: float, quota: float, limits: Limits) -> None:
        self.start = start / limits.scale
        self.quota = quota / limits.scale
        self.limits = limits
        self.seconds: list[tuple[int, float]] = []  # (whole second, units consumed in it), oldest first
        self.matured_peak = 0.0
        self.peak = 0.0
        self.consumed = 0.0

    def current(self, now: float) -> float:
        if self.limits.fixed:
            return self.start
        matured = 0
        while matured < len(self.seconds) and self.seconds[matured][0] + 1 <= now - self.limits.growth_seconds:
            self.matured_peak = max(self.matured_peak, self.seconds[matured][1])
            matured += 1
        del self.seconds[:matured]
        return min(self.quota, max(self.start, 2 * self.matured_peak))

    def consume(self, units: float, now: float) -> None:
        self.consumed += units
        second = int(now)
        if self.seconds and self.seconds[-1][0] == second:
            self.seconds[-1] = (second, self.seconds[-1][1] + units)
        else:
            self.seconds.append((second, units))
        self.peak = max(self.peak, self.seconds[-1][1])


@dataclass
class Partition:
    """One physical partition: its write and read buckets, the keys seen on it, its heat."""

    write: TokenBucket
    read: TokenBucket
    hot_since: float | None = None  # the start of its current run of refusals
    last_refused: float = -math.inf
    refused: int = 0


class Resource:
    """A table or an index: its ceilings and their burst buckets, its partitions and their buckets."""

    def __init__(self, name: str, limits: Limits, now: float) -> None:
        self.name = name
        self.limits = limits
        self.write = Ceiling(limits.start.write, limits.quota.write, limits)
        self.read = Ceiling(limits.start.read, limits.quota.read, limits)
        # unused capacity is kept up to `burst_seconds`: it lets the whole go past its rate, never a partition
        self.write_bucket = TokenBucket(self.write.start, now, depth=max(1.0, limits.burst_seconds))
        self.read_bucket = TokenBucket(self.read.start, now, depth=max(1.0, limits.burst_seconds))
        self.ranges = HashRanges(self._needed(now))
        self.places: dict[str, float] = {}
        self.partitions = [self._partition(now) for _ in range(len(self.ranges))]
        self.splits = 0

    def _needed(self, now: float) -> int:
        scale = self.limits.scale
        return partitions_for(self.write.current(now) * scale, self.read.current(now) * scale, self.limits.size_bytes)

    def _partition(self, now: float) -> Partition:
        per = self.limits.partition
        scale = self.limits.scale
        return Partition(TokenBucket(per.write / scale, now), TokenBucket(per.read / scale, now))

    def sync(self, now: float) -> None:
        """The ceilings as they stand now, and partitions enough to serve them."""
        self.write_bucket.rate = self.write.current(now)
        self.read_bucket.rate = self.read.current(now)
        if self.ranges.grow_to(self._needed(now)):
            self.partitions = [self._partition(now) for _ in range(len(self.ranges))]

    def place(self, key: str) -> int:
        if key not in self.places:
            self.places[key] = key_place(key)
        return self.ranges.index(self.places[key])

    def refused_on(self, index: int, now: float, split_after: float | None) -> None:
        """A write refused for partition `index`'s heat: split it once it has stayed hot long enough."""
        partition = self.partitions[index]
        partition.refused += 1
        if partition.hot_since is None or now - partition.last_refused > 1.0:
            partition.hot_since = now
        partition.last_refused = now
        if split_after is None or now - partition.hot_since < split_after:
            return
        if self.ranges.split(index, self.places.values()):
            self.splits += 1
            # the two halves start afresh; the others keep their buckets
            self.partitions[index : index + 1] = [self._partition(now), self._partition(now)]

    def loads(self) -> dict[int, list[str]]:
        """The keys seen on each partition."""
        placed: dict[int, list[str]] = {}
        for key, place in self.places.items():
            placed.setdefault(self.ranges.index(place), []).append(key)
        return placed
