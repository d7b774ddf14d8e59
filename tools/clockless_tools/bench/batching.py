"""3. Batched conditional transactions against the sequential loop, in the same run, with 8 ms added
to every request: window generation (49 programs' actions + 1 counter action per transaction) and
session cleanup (99 conditional deletes + 1). Both paths read the same sparse-index shards and
write with the same conditions; the loop is today's job function (one transaction per window, one
conditional `DeleteItem` per session).

The batched path here packs raw low-level actions itself (`RawBatches`); it is the measurement
of what batching buys, made before the kit's writer existed, and is kept beside it as the floor
the kit's writer (retries, cancellation reasons, tokens) is compared with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

from clockless.fanout.partition import PartitionAccounting
from clockless.fanout.store import PartitionStore
from clockless.fanout.writer import BatchWriter, Entry
from clockless_tools.bench.harness import Harness, effect_of
from clockless_tools.bench.latency import added_latency
from clockless_tools.bench.meter import Measured, measure
from clockless_tools.bench.rawwork import RawWork
from clockless_tools.bench.results import CLEANUP_JOB, WINDOW_JOB, BenchError, BenchSizes, Figure
from clockless_tools.bench.workloads import Workload

METERED_ITEMS: Final = 500
MAX_ITEM_ACTIONS: Final = 99  # + 1 counter action: DynamoDB's 100 per transaction
LOOP_LABEL: Final = "sequential loop (the job's logic before fan-out), same run, same added latency"


def pack(actions: Sequence[list[dict[str, Any]]], limit: int = MAX_ITEM_ACTIONS) -> list[list[dict[str, Any]]]:
    """Items' actions whole, in order, into transactions of at most `limit` actions."""
    batches: list[list[dict[str, Any]]] = []
    for item in actions:
        if not batches or len(batches[-1]) + len(item) > limit:
            batches.append([])
        batches[-1] += item
    return batches


@dataclass
class RawBatches:
    """The floor: raw transactions packed here, each with the lane's counter action, no retries,
    no tokens, no cancellation reasons read (a cancelled transaction is a bench error)."""

    harness: Harness
    job: str
    concurrency: int = 1

    def counter(self, tick_key: str, shard: str, lane: int, applied: int) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self.harness.ledger_table,
                "Key": {"job": {"S": f"{self.job}#work"}, "scheduled_time": {"S": f"{tick_key}#p{shard}#l{lane}"}},
                "UpdateExpression": "ADD applied :applied",
                "ExpressionAttributeValues": {":applied": {"N": str(applied)}},
            }
        }

    def run(self, tick_key: str) -> int:
        """Every shard read then written, shard after shard; the items applied."""
        return sum(self.run_shard(tick_key, str(shard)) for shard in range(RawWork(self.harness, self.job).shards))

    def run_shard(self, tick_key: str, shard: str) -> int:
        work = RawWork(self.harness, self.job)
        items = work.read_all(shard)
        per_item = len(work.writes(items[0], {}, tick_key)) if items else 1
        batches = pack([work.writes(item, {}, tick_key) for item in items])
        lanes = max(1, min(self.concurrency, len(batches)))

        def lane_work(lane: int) -> int:
            done = 0
            for actions in batches[lane::lanes]:
                applied = len(actions) // per_item
                self.harness.client.transact_write_items(
                    TransactItems=[*actions, self.counter(tick_key, shard, lane, applied)]
                )
                done += applied
            return done

        if lanes == 1:
            return lane_work(0)
        with ThreadPoolExecutor(max_workers=lanes) as pool:
            return sum(pool.map(lane_work, range(lanes)))


@dataclass
class KitBatches:
    """The kit's batch writer (tokens, cancellation reasons, backoff, lanes) with its partition
    accounting (a counter action per transaction on the lane's record), over the same work."""

    harness: Harness
    job: str
    concurrency: int = 1

    def run(self, tick_key: str) -> int:
        return sum(self.run_shard(tick_key, str(shard)) for shard in range(RawWork(self.harness, self.job).shards))

    def run_shard(self, tick_key: str, shard: str) -> int:
        work = RawWork(self.harness, self.job)
        job, _, scheduled_time = tick_key.partition("@")
        records = PartitionStore(
            self.harness.client, self.harness.ledger_table, job, scheduled_time, shard, "bench", 86_400
        )

        def refuse(entries: list[Entry], reason: str) -> None:
            raise BenchError(f"{self.job}: {len(entries)} item(s) failed on fresh tables: {reason}")

        writer = BatchWriter(self.harness.client, PartitionAccounting(records), refuse, concurrency=self.concurrency)
        entries = [Entry(work.item_key(item), work.writes(item, {}, tick_key), item) for item in work.read_all(shard)]
        counters = writer.apply(entries)
        return counters.applied


def workload_for(job: str, items: int) -> Workload:
    return Workload(due_programs=items) if job == WINDOW_JOB else Workload(expired_empty_sessions=items)


@dataclass(frozen=True, slots=True)
class Timed:
    items: int
    seconds: float
    requests: int

    @property
    def per_second(self) -> float:
        return self.items / self.seconds


def time_loop(harness: Harness, job: str, items: int, latency_ms: float) -> Timed:
    harness.reset_tables()
    harness.seed(workload_for(job, items), in_process=True)
    with added_latency(latency_ms):
        measured = harness.sequential_loop(job, harness.tick(job))
    done = effect_of(job, measured.result)
    if done != items:
        raise BenchError(f"{job}: the loop did {done} of {items} items")
    return Timed(done, measured.seconds, measured.requests)


def time_batched(harness: Harness, job: str, items: int, run: Callable[[str], int], latency_ms: float) -> Timed:
    harness.reset_tables()
    harness.seed(workload_for(job, items), in_process=True)
    tick = harness.tick(job)
    with added_latency(latency_ms):
        measured = measure(lambda: run(tick.key))
    if measured.result != items:
        raise BenchError(f"{job}: the batched path applied {measured.result} of {items} items")
    return Timed(items, measured.seconds, measured.requests)


def metered_batched(harness: Harness, job: str, items: int) -> Measured:
    """The kit's batched path once more, untimed, with its write units metered: its cost per item."""
    harness.reset_tables()
    harness.seed(workload_for(job, items), in_process=True)
    tick = harness.tick(job)
    return measure(lambda: KitBatches(harness, job, 1).run(tick.key), write_units=True)


def per_item(job: str, metered: Measured, items: int, harness: Harness) -> tuple[list[Figure], dict[str, Any]]:
    writes = metered.writes
    assert writes is not None
    key = f"batching.{job}.per_item"
    figures = [
        Figure(f"{key}.requests", f"{job}: requests per item, batched", "requests", metered.requests / items, None, ""),
        Figure(
            f"{key}.write_units",
            f"{job}: write units per item, batched (tables + indexes)",
            "WCU",
            writes.total / items,
            None,
            "",
        ),
    ]
    details = {
        "items": items,
        "operations": dict(metered.operations),
        "wcu_per_item_by_table": {t: round(u / items, 3) for t, u in writes.by_table.items()},
        "wcu_per_item_by_index": {i: round(u / items, 3) for i, u in writes.by_index.items()},
    }
    return figures, details


def measure_batching(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {"added_latency_ms": sizes.added_latency_ms, "items": sizes.batching_items}
    for job in (WINDOW_JOB, CLEANUP_JOB):
        loop = time_loop(harness, job, sizes.batching_items, sizes.added_latency_ms)
        runs = {
            name: time_batched(harness, job, sizes.batching_items, writer.run, sizes.added_latency_ms)
            for name, writer in (
                ("raw_concurrency_1", RawBatches(harness, job, 1)),
                ("kit_writer_concurrency_1", KitBatches(harness, job, 1)),
                ("kit_writer_concurrency_4", KitBatches(harness, job, 4)),
            )
        }
        for name, timed in runs.items():
            figures.append(
                Figure(
                    f"batching.{job}.{name}.items_per_second",
                    f"{job}: items/s, batched transactions ({name.replace('_', ' ')}), "
                    f"{sizes.batching_items:,} items, +{sizes.added_latency_ms:g} ms per request",
                    "items/s",
                    timed.per_second,
                    loop.per_second,
                    LOOP_LABEL,
                )
            )
        metered_items = min(sizes.batching_items, METERED_ITEMS)
        cost_figures, cost_details = per_item(job, metered_batched(harness, job, metered_items), metered_items, harness)
        figures += cost_figures
        details[job] = {
            "per_item": cost_details,
            "loop": {"seconds": round(loop.seconds, 2), "requests": loop.requests},
            **{name: {"seconds": round(timed.seconds, 2), "requests": timed.requests} for name, timed in runs.items()},
        }
    return figures, details
