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
from datetime import timedelta
from typing import Any, Final

from clockless import format_scheduled_time
from clockless_tools.bench.harness import Harness, effect_of
from clockless_tools.bench.latency import added_latency
from clockless_tools.bench.meter import Measured, measure
from clockless_tools.bench.model import ItemCost, Limits, model_figures
from clockless_tools.bench.results import CLEANUP_JOB, WINDOW_JOB, BenchError, BenchSizes, Figure
from clockless_tools.bench.workloads import Workload
from session_cleanup.repository import EMPTY_INDEX_SHARDS, SessionModel
from window_generation.repository import DUE_INDEX_SHARDS, STATUS_ACTIVE, ProgramModel

# Workers per job: the work queue's EventSourceMapping MaximumConcurrency (SPEC-16: 16, one per shard).
WORKERS: Final = 16
METERED_ITEMS: Final = 500
MAX_ITEM_ACTIONS: Final = 99  # + 1 counter action: DynamoDB's 100 per transaction
LOOP_LABEL: Final = "sequential loop (today's job function), same run, same added latency"


@dataclass(frozen=True, slots=True)
class Entry:
    """One item's conditional actions, applied together."""

    key: str
    actions: list[dict[str, Any]]


def pack(entries: Sequence[Entry], limit: int = MAX_ITEM_ACTIONS) -> list[list[Entry]]:
    """Items whole, in order, into batches of at most `limit` actions."""
    batches: list[list[Entry]] = []
    size = 0
    for entry in entries:
        if not batches or size + len(entry.actions) > limit:
            batches.append([])
            size = 0
        batches[-1].append(entry)
        size += len(entry.actions)
    return batches


def _query_all(client: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = client.query(**request)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}


def window_entries(harness: Harness, shard: int, tick_key: str) -> list[Entry]:
    """A due-index shard's programs, each as its window's conditional Put and its roll (the
    program's Update, conditioned on the end it was read with and on being active)."""
    settings, business_date = harness.window_settings, harness.layout.business_date.isoformat()
    found = _query_all(
        harness.client,
        {
            "TableName": settings.programs_table,
            "IndexName": ProgramModel.due_index.Meta.index_name,
            "KeyConditionExpression": "due_shard = :shard AND current_window_end <= :date",
            "ExpressionAttributeValues": {":shard": {"S": str(shard)}, ":date": {"S": business_date}},
        },
    )
    entries = []
    for program in found:
        tenant, program_id = program["tenant_id"]["S"], program["program_id"]["S"]
        start = program["current_window_end"]["S"]
        length = timedelta(days=int(program["window_length_days"]["N"]))
        end = (harness.layout.business_date.fromisoformat(start) + length).isoformat()
        window = {
            "program_key": {"S": f"{tenant}#{program_id}"},
            "start_date": {"S": start},
            "tenant_id": {"S": tenant},
            "program_id": {"S": program_id},
            "end_date": {"S": end},
            "created_for_tick": {"S": tick_key},
        }
        put = {
            "TableName": settings.windows_table,
            "Item": window,
            "ConditionExpression": "attribute_not_exists(program_key)",
        }
        roll = {
            "TableName": settings.programs_table,
            "Key": {"tenant_id": program["tenant_id"], "program_id": program["program_id"]},
            "UpdateExpression": "SET current_window_end = :end",
            "ConditionExpression": "current_window_end = :read AND #status = :active",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":end": {"S": end},
                ":read": {"S": start},
                ":active": {"S": STATUS_ACTIVE},
            },
        }
        entries.append(Entry(f"{tenant}#{program_id}", [{"Put": put}, {"Update": roll}]))
    return entries


def session_entries(harness: Harness, shard: int, tick_key: str) -> list[Entry]:
    """An empty-index shard's expired sessions, each as a Delete conditioned on still being empty."""
    table = harness.cleanup_settings.sessions_table
    cutoff = format_scheduled_time(harness.layout.cleanup_tick - harness.layout.grace)
    found = _query_all(
        harness.client,
        {
            "TableName": table,
            "IndexName": SessionModel.empty_index.Meta.index_name,
            "KeyConditionExpression": "empty_shard = :shard AND started_at <= :cutoff",
            "ExpressionAttributeValues": {":shard": {"S": str(shard)}, ":cutoff": {"S": cutoff}},
        },
    )
    return [
        Entry(
            f"{item['tenant_id']['S']}#{item['session_id']['S']}",
            [
                {
                    "Delete": {
                        "TableName": table,
                        "Key": {"tenant_id": item["tenant_id"], "session_id": item["session_id"]},
                        "ConditionExpression": "exercise_count = :zero",
                        "ExpressionAttributeValues": {":zero": {"N": "0"}},
                    }
                }
            ],
        )
        for item in found
    ]


ENTRIES: Final[dict[str, tuple[Callable[[Harness, int, str], list[Entry]], int]]] = {
    WINDOW_JOB: (window_entries, DUE_INDEX_SHARDS),
    CLEANUP_JOB: (session_entries, EMPTY_INDEX_SHARDS),
}


@dataclass
class RawBatches:
    """Packed raw transactions, each with the lane's counter action, `concurrency` in flight.
    No retries: a cancelled transaction is a bench error (the tables are fresh)."""

    harness: Harness
    job: str
    concurrency: int = 1

    def counter(self, tick_key: str, shard: int, lane: int, applied: int) -> dict[str, Any]:
        ledger = self.harness.ledger_table
        return {
            "Update": {
                "TableName": ledger,
                "Key": {"job": {"S": f"{self.job}#work"}, "scheduled_time": {"S": f"{tick_key}#p{shard}#l{lane}"}},
                "UpdateExpression": "ADD applied :applied",
                "ExpressionAttributeValues": {":applied": {"N": str(applied)}},
            }
        }

    def run(self, tick_key: str) -> int:
        """Every shard read then written, shard after shard; the items applied."""
        return sum(self.run_shard(tick_key, shard) for shard in range(ENTRIES[self.job][1]))

    def run_shard(self, tick_key: str, shard: int) -> int:
        """One shard (a partition): read, packed, written in up to `concurrency` lanes."""
        read, _ = ENTRIES[self.job]
        batches = pack(read(self.harness, shard, tick_key))
        lanes = max(1, min(self.concurrency, len(batches)))

        def lane_work(lane: int) -> int:
            done = 0
            for batch in batches[lane::lanes]:
                actions = [action for entry in batch for action in entry.actions]
                self.harness.client.transact_write_items(
                    TransactItems=[*actions, self.counter(tick_key, shard, lane, len(batch))]
                )
                done += len(batch)
            return done

        if lanes == 1:
            return lane_work(0)
        with ThreadPoolExecutor(max_workers=lanes) as pool:
            return sum(pool.map(lane_work, range(lanes)))


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
        measured = harness.call_bare(job, harness.tick(job))
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
    """The batched path once more, untimed, with its write units metered: its cost per item."""
    harness.reset_tables()
    harness.seed(workload_for(job, items), in_process=True)
    tick = harness.tick(job)
    return measure(lambda: RawBatches(harness, job, 1).run(tick.key), write_units=True)


def per_item(
    job: str, metered: Measured, items: int, harness: Harness
) -> tuple[list[Figure], dict[str, Any], ItemCost]:
    writes = metered.writes
    assert writes is not None
    index = ProgramModel.due_index.Meta.index_name if job == WINDOW_JOB else SessionModel.empty_index.Meta.index_name
    tenant_table = (
        harness.window_settings.programs_table if job == WINDOW_JOB else harness.cleanup_settings.sessions_table
    )
    sparse = sum(units for name, units in writes.by_index.items() if name.endswith(f"/{index}"))
    cost = ItemCost({table: units / items for table, units in writes.by_table.items()}, sparse / items, tenant_table)
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
    return figures, details, cost


def measure_batching(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {"added_latency_ms": sizes.added_latency_ms, "items": sizes.batching_items}
    for job in (WINDOW_JOB, CLEANUP_JOB):
        loop = time_loop(harness, job, sizes.batching_items, sizes.added_latency_ms)
        runs = {
            f"raw_concurrency_{concurrency}": time_batched(
                harness, job, sizes.batching_items, RawBatches(harness, job, concurrency).run, sizes.added_latency_ms
            )
            for concurrency in (1, 4)
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
        cost_figures, cost_details, cost = per_item(
            job, metered_batched(harness, job, metered_items), metered_items, harness
        )
        figures += cost_figures
        shards = ENTRIES[job][1]
        worker = runs["raw_concurrency_4"].per_second
        model, model_details = model_figures(
            f"batching.{job}.model", job, cost, Limits(WORKERS, worker, shards), loop.per_second
        )
        figures += model
        details[job] = {
            "per_item": cost_details,
            "model_1m": model_details,
            "loop": {"seconds": round(loop.seconds, 2), "requests": loop.requests},
            **{name: {"seconds": round(timed.seconds, 2), "requests": timed.requests} for name, timed in runs.items()},
        }
    return figures, details
