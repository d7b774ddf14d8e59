"""7. The night model checked against the capacity-faithful emulator: a fanned-out tick per job
on the embedded DynamoDB with DynamoDB's limits divided by `check_scale` (so this machine can
meet them, and they, not the machine, set the pace), observed against what the model predicts
for the same items, limits, workers and placement of the keys on partitions, run transaction by
transaction (bench/lumps.py: at this scale a worker's whole shard is one transaction, a
sixteenth of the night on the partition that binds, which the fluid of bench/model.py, right
for 1M items, does not see; the fluid's time is kept beside it). The
regimes: new tables (cold), tables warmed to `CHECK_WARM_WRITE_UNITS` (the tables' ceilings
bind), tables warmed to the shards' rate (`keys`: every key at its limit, the partitions bind),
each spread over 16 tenants; and one tenant, cold and warm.

The model is given this machine's supply (items/s of the same tick with no limits enforced,
measured just before) in place of Lambda's, the coordinator's time measured in that tick, the
partitions' sizes and each shard's items under each tenant key as seeded, and the places the
emulator hashes the tenant and shard keys to; everything else is the model as it predicts 1M
items. Each tick runs on new workers with the kit's own pacing (for DynamoDB's real 1,000 units
per key; the model runs the same pacer). A scenario passes when the tick ends `succeeded` with every
item applied, nothing in the work dead-letter queue, no run whose message failed (on Lambda: a
wait for the visibility timeout), and the observed time within 25 % of the prediction.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import replace
from typing import Any, Final

from clockless_tools.bench.fanned_out import workload
from clockless_tools.bench.harness import Harness, partitions_sent
from clockless_tools.bench.lumps import granular
from clockless_tools.bench.model import (
    PARTITION_WCU,
    ItemCost,
    Night,
    Placement,
    declared_for,
    over_placements,
    predict,
)
from clockless_tools.bench.night import SPREAD_TENANTS, item_cost, tenant_key_counts
from clockless_tools.bench.results import BenchError, BenchSizes, Figure
from clockless_tools.bench.rig import FanOutRig, counters_of, worker_concurrency
from clockless_tools.local.capacity import CapacitySettings, DynamoDBCapacity, Start
from clockless_tools.local.partitions import canonical, key_place
from clockless_tools.local.units import MotoTables, moto_dynamodb_backend

TOLERANCE: Final = 0.25
_START_WORDS: Final = {
    "cold": "new on-demand tables",
    "warm": "tables warmed to their ceiling",
    "keys": "tables warmed to the shards' rate (every key at its limit)",
}
# Warm, here: every table and index declared at 1.5 x a new one's 4,000 write units per second, so
# the warm night is faster than the cold one and still well under this machine's own supply
# (a night the machine cannot keep up with checks the machine, not the model).
CHECK_WARM_WRITE_UNITS: Final = 6_000.0
SCENARIOS: Final = (
    ("cold", "spread"),
    ("warm", "spread"),
    ("keys", "spread"),
    ("cold", "one_tenant"),
    ("warm", "one_tenant"),
)


def _partition_items(
    harness: Harness, cost: ItemCost, workers: int
) -> tuple[list[int], list[float], list[Counter[str]], list[int]]:
    """The night's items per shard key, counted on the job's shard index, largest first, with
    the place each shard key hashes to, when the index is the tenant table's each shard's items
    under each of that table's partition key values, and the worker that reads each key (key k:
    worker k % workers, clockless.dynamo.partition_keys)."""
    table, _, index = cost.shard_index.partition("/")
    tenant_key = MotoTables(moto_dynamodb_backend()).shape(table)[0][0] if table == cost.tenant_table else None
    counts: Counter[str] = Counter()
    tenants: dict[str, Counter[str]] = {}
    request: dict[str, Any] = {"TableName": table, "IndexName": index}
    while True:
        page = harness.client.scan(**request)
        for item in page.get("Items") or []:
            shard = next((value for name, value in item.items() if name.endswith("_shard")), None)
            if shard is not None:
                counts[canonical(shard)] += 1
                if tenant_key is not None and tenant_key in item:
                    tenants.setdefault(canonical(shard), Counter())[canonical(item[tenant_key])] += 1
        if "LastEvaluatedKey" not in page:
            # in the order each worker reads its keys (by number), so the model reads them in turn
            ordered = sorted(counts.items(), key=lambda kv: _key_number(kv[0]))
            return (
                [count for _, count in ordered],
                [key_place(key) for key, _ in ordered],
                [tenants.get(key, Counter()) for key, _ in ordered],
                [_key_number(key) % workers for key, _ in ordered],
            )
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _key_number(key: str) -> int:
    """A shard key's number, from its wire form (`canonical`: {"S": "12"})."""
    (value,) = json.loads(key).values()
    return int(value)


def _dead_letters(harness: Harness, job: str) -> int:
    _, dlq = harness.work_queues[job]
    attributes = harness.sqs.get_queue_attributes(
        QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return sum(int(value) for value in attributes.values())


def run_tick(
    harness: Harness, job: str, items: int, *, tenants: int, workers: int, settings: CapacitySettings | None
) -> dict[str, Any]:
    """One tick on freshly seeded tables, the limits enforced once the seed is in; what it did."""
    if harness.server is None:
        raise BenchError("the capacity check needs the bench's own embedded DynamoDB (no --endpoint)")
    harness.reset_tables()
    harness.seed(replace(workload(job, items), tenants=tenants), in_process=True)
    rig = FanOutRig(harness, job)
    capacity: DynamoDBCapacity | None = None
    try:
        with rig.active():
            capacity = harness.server.enforce(settings)
            started = time.perf_counter()
            partitions_sent(job, rig.start())
            fanned_out = time.perf_counter()
            rig.drain(workers)
            seconds = time.perf_counter() - started
        ledger = counters_of(rig.tick_entry())
        dead = _dead_letters(harness, job)
    finally:
        harness.server.enforce(None)
        rig.close()
    summary = ledger.get("summary") or {}
    return {
        "seconds": round(seconds, 2),
        "coordinator_seconds": round(fanned_out - started, 2),
        "status": ledger["status"],
        "applied": summary.get("applied"),
        "dead_lettered": dead,
        "failed_runs": rig.failed_runs,
        "throttled": dict(capacity.stats.throttled) if capacity else {},
        "partitions": capacity.partitions() if capacity else {},
    }


def check_job(harness: Harness, job: str, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    workers = worker_concurrency(harness.template, job)
    memory = harness.template.function(harness.functions[job]).memory_size
    kit = FanOutRig(harness, job).worker_settings()
    cost = item_cost(harness, job, sizes.check_items)
    free = run_tick(harness, job, sizes.check_items, tenants=SPREAD_TENANTS, workers=workers, settings=None)
    # the workers' own supply: the unlimited tick without its coordinator, whose time the model adds
    supply = sizes.check_items / (free["seconds"] - free["coordinator_seconds"])
    warm = dict.fromkeys((*cost.table_wcu, *cost.index_wcu), CHECK_WARM_WRITE_UNITS)
    # every worker at its shard key's limit (unscaled): the tables take more than the keys can
    keys = declared_for(cost, workers * PARTITION_WCU / max(cost.index_wcu[cost.shard_index], 1.0))
    figures: list[Figure] = []
    rows: dict[str, Any] = {"unlimited": {**free, "items_per_second": round(supply, 1)}}
    for start, tenancy in SCENARIOS:
        items = sizes.check_items if tenancy == "spread" else sizes.check_one_tenant_items
        tenants = SPREAD_TENANTS if tenancy == "spread" else 1
        declared = {"cold": None, "warm": warm, "keys": keys}[start]
        settings = CapacitySettings(
            start=Start.COLD if declared is None else Start.WARM, scale=sizes.check_scale, declared=declared or {}
        )
        harness.reset_tables()
        harness.seed(replace(workload(job, items), tenants=tenants), in_process=True)
        shard_items, shard_places, shard_tenants, readers = _partition_items(harness, cost, workers)
        night = Night(
            items,
            workers,
            tenants,
            memory,
            warm=declared,
            scale=sizes.check_scale,
            supply=supply,
            worker_supply=supply,
            partition_items=shard_items,
            fixed_seconds=free["coordinator_seconds"],
            keys=max(len(shard_items), workers),
            key_workers=readers,
        )
        # the tenant keys as seeded (tenant#bucket), each with its share of the items
        counts = tenant_key_counts(harness, cost.tenant_table) if cost.tenant_table else Counter({"": 1})
        total = sum(counts.values())
        placement = Placement(
            tuple(key_place(key) for key in counts),
            tuple(shard_places),
            tuple(count / total for count in counts.values()),
            tuple(tuple(seeded[key] for key in counts) for seeded in shard_tenants) if any(shard_tenants) else (),
        )
        prediction = predict(cost, night, placement)
        lumpy = granular(cost, night, placement, page_size=kit.page_size, lanes=kit.concurrency, pacing=kit.pacing())
        placements = over_placements(cost, night, samples=200)
        observed = run_tick(harness, job, items, tenants=tenants, workers=workers, settings=settings)
        ratio = observed["seconds"] / lumpy.seconds
        clean = (
            observed["status"] == "succeeded"
            and observed["applied"] == items
            and observed["dead_lettered"] == 0
            and observed["failed_runs"] == 0
        )
        met = clean and abs(ratio - 1) <= TOLERANCE
        name = f"{start}.{tenancy}"
        figures.append(
            Figure(
                f"capacity_check.{job}.{name}.seconds",
                f"{job}: observed seconds on the emulator (limits / {sizes.check_scale:g}), {items:,} items, "
                f"{tenants} tenant(s), {_START_WORDS[start]}; against the model's prediction in whole transactions "
                f"for the emulator's placement of the keys (bound by {prediction.bound})",
                "s",
                observed["seconds"],
                lumpy.seconds,
                "the model's prediction in whole transactions",
                target=f"within {TOLERANCE:.0%} of the model; succeeded, 0 in the DLQ, 0 failed runs",
                met=met,
            )
        )
        rows[name] = {
            "items": items,
            "tenants": tenants,
            "predicted_seconds": round(lumpy.seconds, 2),
            "predicted_range_over_backoffs": [round(lumpy.low, 2), round(lumpy.high, 2)],
            "predicted_refusals": round(lumpy.refusals, 1),
            "fluid_seconds": round(prediction.seconds, 2),
            "predicted_bound": prediction.bound,
            "expected_seconds_over_placements": round(placements.expected, 2),
            "p95_seconds_over_placements": round(placements.p95, 2),
            "observed": observed,
            "ratio": round(ratio, 3),
            "met": met,
        }
    declared_units = {"warm": warm, "keys": keys}
    return figures, {
        "workers": workers,
        "scale": sizes.check_scale,
        "declared_warm_write_units": declared_units,
        **rows,
    }


def measure_capacity_check(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    if harness.server is None:
        return [], {"skipped": "the check needs the bench's own embedded DynamoDB (not --endpoint)"}
    figures: list[Figure] = []
    details: dict[str, Any] = {"tolerance": TOLERANCE}
    for job in harness.functions:
        job_figures, details[job] = check_job(harness, job, sizes)
        figures += job_figures
    return figures, details
