"""6. A night on DynamoDB, modelled (bench/model.py) from what is measured here: 1M and 10M due
items per job, one tenant and spread, on cold tables and on tables warmed to the rate the shards
allow, each as the expected time and the 95th percentile over placements of its keys on physical
partitions, naming the partition that binds; and what a night costs (bench/cost.py) per million
items, write and read units included, against the sequential loop.

Measured per job, on the embedded server: a fanned-out tick of `batching_items` items run by one
worker with one lane (so all the worker's client work is on one thread): its write and read units
per item on each table and index (metered, in a second run: metering reads moto's state) and its
client CPU per item; the sequential loop's time per item with the bench's added latency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from clockless.fanout.keys import work_job
from clockless.fanout.settings import DEFAULT_KEY_WRITE_UNITS_PER_ITEM
from clockless_tools.bench.cost import PRICES_READ_ON, fanned_out_cost, loop_cost
from clockless_tools.bench.fanned_out import workload
from clockless_tools.bench.harness import INDEX_KEYS, Harness, effect_of, partitions_sent
from clockless_tools.bench.latency import added_latency
from clockless_tools.bench.lumps import Granular, granular
from clockless_tools.bench.meter import measure
from clockless_tools.bench.model import (
    MILLION,
    PLACEMENTS,
    SOURCES,
    ItemCost,
    Night,
    Spread,
    declared_for,
    floor,
    over_placements,
    predict,
)
from clockless_tools.bench.results import BenchError, BenchSizes, Figure
from clockless_tools.bench.rig import FanOutRig, counters_of, worker_concurrency, worker_function
from clockless_tools.local.partitions import canonical
from clockless_tools.local.units import MotoTables, moto_dynamodb_backend

SIZES: Final = (MILLION, 10 * MILLION)
SPREAD_TENANTS: Final = 16
TENANT_KEY_HINT: Final = "tenant"  # the partition key attribute that names a tenant
SHARD_KEY_HINT: Final = "_shard"  # the index partition key attribute that names a shard
# The unmetered ticks a job's client CPU per item is measured on: the least is taken, all are printed.
CPU_RUNS: Final = 3
# A write action of a transaction costs twice a plain write's units: 2 per KB (DynamoDB's
# read/write capacity unit consumption for transactions).
TRANSACTIONAL_UNITS_PER_ACTION: Final = 2.0
LANE_RECORD: Final = "#l"  # in a work record's sort key: a lane's counters (clockless.fanout.keys.lane_key)
# (items, tenancy, start) -> seconds the p95 placement must stay under (issues 20 and 30)
TARGETS: Final = {
    (MILLION, "spread", "warm"): 600.0,
    (10 * MILLION, "spread", "warm"): 3_600.0,
    (MILLION, "spread", "cold"): 600.0,
    (MILLION, "one_tenant", "warm"): 600.0,
}


@dataclass(frozen=True, slots=True)
class JobMeasure:
    cost: ItemCost
    loop_seconds_per_item: float
    loop_wcu_per_item: float
    loop_rcu_per_item: float
    workers: int
    memory_mb: int
    run_seconds: float  # a worker run's length before it hands on (Timeout - time budget)
    keys: int = 0  # the index shard keys the job writes, read `workers` to a tick (0: one per worker)


def item_cost(harness: Harness, job: str, items: int) -> ItemCost:
    """Write units per item by table and index (metered), and client CPU per item (unmetered)."""
    tables = MotoTables(moto_dynamodb_backend())
    runs = {}
    cpu_runs: list[float] = []
    keys: Counter[str] = Counter()
    for metered in (True, *([False] * CPU_RUNS)):
        harness.reset_tables()
        harness.seed(workload(job, items), in_process=True)
        # the workload is one tenant's: the key values its items are under are its buckets
        keys = keys or _tenant_table_keys(harness, tables)
        rig = FanOutRig(harness, job, concurrency=1)
        try:
            with rig.active():
                measured = measure(
                    lambda rig=rig: (partitions_sent(job, rig.start()), rig.drain(1)),  # type: ignore[misc]
                    bookkeeping_tables=harness.bookkeeping_tables,
                    write_units=metered,
                    allow_other_services=True,
                )
            ledger = counters_of(rig.tick_entry())
        finally:
            rig.close()
        if ledger["status"] != "succeeded":
            raise BenchError(f"{job}: the measured tick ended {ledger}")
        runs[metered] = (measured, rig.client_cpu_seconds)
        if not metered:
            cpu_runs.append(rig.client_cpu_seconds / items)
    read_units = runs[True][0].read_units
    writes = runs[True][0].writes
    assert writes is not None
    table_wcu = {table: units / items for table, units in writes.by_table.items()}
    index_wcu = {index: units / items for index, units in writes.by_index.items()}
    tenant_table = next((t for t in table_wcu if tables.shape(t)[0][0].startswith(TENANT_KEY_HINT)), None)
    shard_index = max(
        (name for name in index_wcu if _index_partition_key(tables, name).endswith(SHARD_KEY_HINT)),
        key=lambda name: index_wcu[name],
        default="",
    )
    if not shard_index:
        raise BenchError(f"{job}: no index keyed by a shard ({SHARD_KEY_HINT}) took the items' writes: {index_wcu}")
    worker = harness.template.function(worker_function(harness.template, job))
    paced = float(str(worker.environment.get("WORK_KEY_WRITE_UNITS_PER_ITEM", DEFAULT_KEY_WRITE_UNITS_PER_ITEM)))
    # the work key's lane records (`...#l<lane>`) take a counter per transaction; its partition
    # records a lease, cursors and a done per run
    work_records = {key: units for key, units in writes.by_item.items() if f"|{work_job(job)}|" in key}
    work_key = sum(units for key, units in work_records.items() if LANE_RECORD in key.rpartition("|")[2])
    work_runs = sum(work_records.values()) - work_key
    tick_key = max((units for key, units in writes.by_partition_key.items() if key.endswith(f"|{job}")), default=0.0)
    # an item's write actions, counted: its units on the job's own tables, 2 per action in a
    # transaction (each item under 1 KB)
    domain_units = sum(units for table, units in table_wcu.items() if table not in harness.bookkeeping_tables)
    return ItemCost(
        table_wcu,
        index_wcu,
        tenant_table,
        shard_index,
        # the least of the unmetered runs: what the work costs, the rest being the machine's load
        min(cpu_runs),
        work_key / items,
        read_units=read_units / items,
        tenant_buckets=max(1, len(keys)) if tenant_table else 1,
        paced_units=paced,
        bookkeeping=harness.bookkeeping_tables,
        tick_key_wcu_per_run=tick_key / worker_concurrency(harness.template, job),
        work_key_wcu_per_run=work_runs / worker_concurrency(harness.template, job),
        actions_per_item=max(1, round(domain_units / TRANSACTIONAL_UNITS_PER_ACTION)),
        cpu_seconds_runs=tuple(cpu_runs),
    )


def _tenant_table_keys(harness: Harness, tables: MotoTables) -> Counter[str]:
    """The key values of the first table keyed by tenant that holds items (empty: none)."""
    for table in harness.client.list_tables()["TableNames"]:
        if tables.shape(table)[0][0].startswith(TENANT_KEY_HINT):
            counts = tenant_key_counts(harness, table)
            if counts:
                return counts
    return Counter()


def tenant_key_counts(harness: Harness, table: str) -> Counter[str]:
    """The items under each partition key value of a tenant-keyed table (canonical wire values)."""
    partition_key = MotoTables(moto_dynamodb_backend()).shape(table)[0][0]
    counts: Counter[str] = Counter()
    request: dict[str, Any] = {
        "TableName": table,
        "ProjectionExpression": "#k",
        "ExpressionAttributeNames": {"#k": partition_key},
    }
    while True:
        page = harness.client.scan(**request)
        counts.update(canonical(item[partition_key]) for item in page.get("Items") or [])
        if "LastEvaluatedKey" not in page:
            return counts
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _index_partition_key(tables: MotoTables, name: str) -> str:
    table, _, index = name.partition("/")
    return next(shape.keys[0] for shape in tables.shape(table)[1] if shape.name == index)


def loop_per_item(harness: Harness, job: str, items: int, latency_ms: float) -> tuple[float, float, float]:
    """The sequential loop's (seconds, write units, read units) per item: timed with the added
    latency, then metered in a second run (metering reads moto's state)."""
    measured = []
    for metered in (False, True):
        harness.reset_tables()
        harness.seed(workload(job, items), in_process=True)
        with added_latency(0.0 if metered else latency_ms):
            loop = harness.sequential_loop(job, harness.tick(job), write_units=metered)
        if effect_of(job, loop.result) != items:
            raise BenchError(f"{job}: the sequential loop did {loop.result}")
        measured.append(loop)
    return measured[0].seconds / items, measured[1].write_units / items, measured[1].read_units / items


def measured_items(sizes: BenchSizes, workers: int) -> int:
    """Items of the tick the per-item costs are measured on: `batching_items`, or enough that each
    partition has `night_items_per_partition`. A partition run's own requests and CPU (lease, first
    query, done, the finisher's look) are spread over its items; on a night of millions they are
    nothing, so a job with more shards must not measure them over fewer items each."""
    return max(sizes.batching_items, sizes.night_items_per_partition * workers)


def job_measure(harness: Harness, job: str, sizes: BenchSizes) -> JobMeasure:
    worker = harness.template.function(worker_function(harness.template, job))
    budget = float(str(worker.environment.get("WORK_TIME_BUDGET_SECONDS", 30)))
    loop_seconds, loop_wcu, loop_rcu = loop_per_item(harness, job, sizes.night_loop_items, sizes.added_latency_ms)
    return JobMeasure(
        cost=item_cost(harness, job, measured_items(sizes, worker_concurrency(harness.template, job))),
        loop_seconds_per_item=loop_seconds,
        loop_wcu_per_item=loop_wcu,
        loop_rcu_per_item=loop_rcu,
        workers=worker_concurrency(harness.template, job),
        memory_mb=worker.memory_size,
        run_seconds=worker.timeout - budget,
        keys=INDEX_KEYS.get(job, 0),
    )


def warm_for_shards(measured: JobMeasure) -> dict[str, float]:
    """The WarmThroughput per table and index that lets every worker go at its shard key's rate."""
    cost = measured.cost
    return declared_for(cost, measured.workers * predict(cost, Night(1, measured.workers)).worker_rate)


def scenarios(measured: JobMeasure) -> Iterator[tuple[str, Night]]:
    """Each size, one tenant and spread, cold and warmed to what the shards allow."""
    warm = warm_for_shards(measured)
    for items in SIZES:
        for tenancy, tenants in (("one_tenant", 1), ("spread", SPREAD_TENANTS)):
            for start, declared in (("cold", None), ("warm", warm)):
                # without on-demand growth: the targets hold at the throughput the night starts with
                night = Night(
                    items,
                    measured.workers,
                    tenants,
                    measured.memory_mb,
                    warm=declared,
                    keys=measured.keys,
                    growth=False,
                )
                yield f"{items // MILLION}m.{tenancy}.{start}", night


def one_key_warning(cost: ItemCost) -> str:
    """What to say when a job's tenant-keyed table puts each tenant under one key ("" if not)."""
    if cost.tenant_table is None or cost.tenant_buckets > 1:
        return ""
    return (
        f"; WARNING: {cost.tenant_table} keys each tenant by one value, so one tenant is one partition's "
        "1,000 write units a second: spread its key (docs/fan-out.md#a-whale-tenant)"
    )


def target_of(night: Night, name: str) -> float | None:
    """The seconds the scenario's p95 must stay under, if it has a target."""
    _, tenancy, start = name.split(".")
    return TARGETS.get((night.items, tenancy, start))


def night_figure(
    job: str,
    name: str,
    night: Night,
    spread: Spread,
    *,
    cost: ItemCost,
    loop_seconds: float,
    warning: str = "",
    transactions: Granular | None = None,
) -> Figure:
    """One modelled night: the p95 over placements against the expected time, and what binds; with
    `transactions`, the same placement's night in whole transactions, which the target holds too."""
    target = target_of(night, name)
    in_transactions = (
        ""
        if transactions is None
        else f"; in whole transactions at that placement (the kit's pacing and backoff, its mean over "
        f"{transactions.draws} draws; no on-demand growth"
        f"{'' if not night.growth else ', so past 30 minutes an upper bound'}): "
        f"{transactions.seconds:,.0f} s ({transactions.low:,.0f}-{transactions.high:,.0f})"
    )
    worst = max(spread.p95, 0.0 if transactions is None else transactions.seconds)
    least = floor(cost, night)
    yardstick = (
        f"; the floor the declared throughput sets ({least.binding}: items x write units per item / its write "
        f"units per second): {least.seconds:,.0f} s, expected {spread.expected / least.seconds:.2f}x it, "
        f"p95 {spread.p95 / least.seconds:.2f}x"
    )
    return Figure(
        f"night.{job}.{name}.seconds",
        f"{job}: modelled seconds for {night.items:,} due items on DynamoDB, {night.tenants} tenant(s), "
        f"{'tables warmed to the shards rate' if night.warm else 'new on-demand tables'}, "
        f"{'with' if night.growth else 'without'} on-demand growth, {night.workers} workers"
        f"{'' if not night.keys else f' over {night.keys} index keys'}: "
        f"the 95th percentile over {spread.samples:,} placements of the keys on partitions (the loop: "
        f"{loop_seconds:,.0f} s); at it, bound by {spread.at_p95.bound}{yardstick}{in_transactions}{warning}",
        "s",
        spread.p95,
        spread.expected,
        "the expected time over the placements",
        target=""
        if target is None
        else f"p95 < {target:,.0f} s" + ("" if transactions is None else ", in transactions too"),
        met=None if target is None else worst < target,
    )


def measure_night(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {"sources": SOURCES, "prices_read_on": PRICES_READ_ON, "placements": PLACEMENTS}
    for job in harness.functions:
        measured = job_measure(harness, job, sizes)
        cost = measured.cost
        warm = warm_for_shards(measured)
        rows: dict[str, Any] = {}
        for name, night in scenarios(measured):
            spread = over_placements(cost, night)
            loop_seconds = night.items * measured.loop_seconds_per_item
            warning = one_key_warning(cost) if night.tenants == 1 else ""
            seeds = sizes.night_transaction_seeds if target_of(night, name) is not None else 0
            transactions = granular(cost, night, spread.placement_at_p95, seeds=seeds) if seeds else None
            figures.append(
                night_figure(
                    job,
                    name,
                    night,
                    spread,
                    cost=cost,
                    loop_seconds=loop_seconds,
                    warning=warning,
                    transactions=transactions,
                )
            )
            at = spread.at_p95
            least = floor(cost, night)
            rows[name] = {
                "items": night.items,
                "tenants": night.tenants,
                "index_keys": night.keys or night.workers,
                "on_demand_growth": night.growth,
                "floor_seconds": round(least.seconds, 1),
                "floor_binding": least.binding,
                "floor_seconds_by_table": {k: round(v, 1) for k, v in least.by_table.items()},
                "expected_seconds": round(spread.expected, 1),
                "p95_seconds": round(spread.p95, 1),
                "expected_over_floor": round(spread.expected / least.seconds, 3),
                "p95_over_floor": round(spread.p95 / least.seconds, 3),
                "even_placement_seconds": round(predict(cost, night).seconds, 1),
                "loop_seconds": round(loop_seconds),
                "bound_at_p95": at.bound,
                "bound_kinds_over_placements": {k: round(v, 3) for k, v in spread.kinds.items()},
                "seconds_bound_at_p95": {k: round(v, 1) for k, v in at.binding.items()},
                "fleet_bounds_items_per_second": {k: round(v, 1) for k, v in at.fleet_bounds.items()},
                "worker_items_per_second": round(at.worker_rate, 1),
                "slowest_partition_items": at.slowest_partition,
                "ceiling_doublings": at.growth_steps,
            }
            if transactions is not None:
                rows[name]["in_transactions_at_p95"] = {
                    "seconds": round(transactions.seconds, 1),
                    "low": round(transactions.low, 1),
                    "high": round(transactions.high, 1),
                    "draws": transactions.draws,
                    "transactions": transactions.transactions,
                    "refusals": round(transactions.refusals, 1),
                }
        spread = over_placements(
            cost, Night(MILLION, measured.workers, SPREAD_TENANTS, measured.memory_mb, warm=warm, keys=measured.keys)
        )
        fanned = fanned_out_cost(
            MILLION,
            cost.total_wcu,
            seconds=spread.p95,
            workers=measured.workers,
            memory_mb=measured.memory_mb,
            run_seconds=measured.run_seconds,
            rcu_per_item=cost.read_units,
        )
        loop = loop_cost(
            MILLION,
            measured.loop_wcu_per_item,
            seconds_per_item=measured.loop_seconds_per_item,
            memory_mb=measured.memory_mb,
            rcu_per_item=measured.loop_rcu_per_item,
        )
        figures.append(
            Figure(
                f"night.{job}.cost_per_1m_items",
                f"{job}: dollars per 1M items at on-demand prices ({PRICES_READ_ON}, us-east-1): write and read "
                "units, Lambda GB-seconds and requests, SQS requests; fanned out, warm, spread, p95 placement",
                "USD",
                fanned.total,
                loop.total,
                "the sequential loop",
            )
        )
        details[job] = {
            "inputs": {
                "wcu_per_item_by_table": {k: round(v, 3) for k, v in cost.table_wcu.items()},
                "wcu_per_item_by_index": {k: round(v, 3) for k, v in cost.index_wcu.items()},
                "wcu_per_item_on_work_key": round(cost.work_key_wcu, 4),
                "wcu_per_run_on_work_key": round(cost.work_key_wcu_per_run, 2),
                "wcu_per_run_on_tick_key": round(cost.tick_key_wcu_per_run, 2),
                "rcu_per_item": round(cost.read_units, 4),
                "actions_per_item": cost.actions_per_item,
                "items_per_transaction": cost.items_per_transaction,
                "tenant_table": cost.tenant_table,
                "tenant_buckets": cost.tenant_buckets,
                "shard_index": cost.shard_index,
                "client_cpu_ms_per_item": round(cost.cpu_seconds * 1000, 4),
                "client_cpu_ms_per_item_runs": [round(run * 1000, 4) for run in cost.cpu_seconds_runs],
                "client_cpu_spread": round(max(cost.cpu_seconds_runs) / cost.cpu_seconds - 1, 3)
                if cost.cpu_seconds_runs and cost.cpu_seconds
                else 0.0,
                "loop_ms_per_item": round(measured.loop_seconds_per_item * 1000, 3),
                "loop_wcu_per_item": round(measured.loop_wcu_per_item, 3),
                "loop_rcu_per_item": round(measured.loop_rcu_per_item, 3),
                "workers": measured.workers,
                "memory_mb": measured.memory_mb,
                "declared_warm_write_units": warm,
            },
            "nights": rows,
            "cost_per_1m_items": {"fanned_out": fanned.as_dict(), "loop": loop.as_dict()},
        }
    return figures, details
