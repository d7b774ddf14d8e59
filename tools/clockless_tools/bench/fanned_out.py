"""5. The fanned-out tick, as deployed: the coordinator's requests and time per tick as the due
items grow (1k and 100k measured; 1M modelled from the measured requests, which do not depend on
the items), and what the whole tick (coordinator, workers, finisher) costs per item in requests
and write units, against the sequential loop on the same items.

The coordinator's model, stated beside the figure: it reads no item, so its requests at 1M are
the requests measured at 100k (the claim transaction, ceil(partitions / 10) `SendMessageBatch`,
the completion transaction), and its time is those requests at the per-request time measured at
100k, with the same added latency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from clockless_tools.bench.harness import Harness, effect_of
from clockless_tools.bench.latency import added_latency
from clockless_tools.bench.meter import Measured, measure
from clockless_tools.bench.results import CLEANUP_JOB, WINDOW_JOB, BenchError, BenchSizes, Figure
from clockless_tools.bench.rig import FanOutRig, run_whole_tick
from clockless_tools.bench.workloads import Workload

MODELLED_ITEMS: Final = 1_000_000
# An earlier tick of the same job, delivered untimed first so the measured tick finds a warm function.
WARM_UP_TICK: Final = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)
SQS_BATCH: Final = 10


def workload(job: str, due: int, table_items: int = 0) -> Workload:
    if job == WINDOW_JOB:
        return Workload.programs_table(due, max(due, table_items))
    return Workload.sessions_table(due, max(due, table_items))


def coordinator_tick(harness: Harness, job: str, due: int, latency_ms: float) -> tuple[Measured, int]:
    """One tick's coordinator on `due` items (not run by workers); (measured, partitions sent)."""
    harness.reset_tables()
    harness.seed(workload(job, due), in_process=True)
    rig = FanOutRig(harness, job)
    try:
        with rig.active():
            # A warm function, as a nightly tick finds it after the first: clients made, imports done.
            rig.start(harness.tick(job, scheduled=WARM_UP_TICK))
            with added_latency(latency_ms):
                measured = measure(rig.start, bookkeeping_tables=harness.bookkeeping_tables, allow_other_services=True)
        summary = measured.result.get("summary") or {}
        partitions = int((summary.get("fan_out") or {}).get("partitions", 0))
        if measured.result.get("outcome") != "executed" or not partitions:
            raise BenchError(f"{job}: the coordinator did not fan out: {measured.result}")
    finally:
        rig.close()
    return measured, partitions


def measure_coordinator(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {"added_latency_ms": sizes.added_latency_ms}
    for job in (WINDOW_JOB, CLEANUP_JOB):
        rows: list[dict[str, Any]] = []
        for due in sizes.coordinator_due_items:
            measured, partitions = coordinator_tick(harness, job, due, sizes.added_latency_ms)
            rows.append(
                {
                    "due_items": due,
                    "requests": measured.requests,
                    "operations": dict(measured.operations),
                    "partitions": partitions,
                    "ms": round(measured.seconds * 1000, 1),
                }
            )
        small, large = rows[0], rows[-1]
        if small["operations"] != large["operations"]:
            raise BenchError(f"{job}: coordinator requests grew with the items: {small} vs {large}")
        # The claim and completion transactions, the partition messages, and the ledger's
        # last-success query for a job that reads it (cleanup): nothing that depends on the items.
        sends = math.ceil(large["partitions"] / SQS_BATCH)
        allowed = {"TransactWriteItems": 2, "SendMessageBatch": sends, "Query": 1}
        ops = large["operations"]
        as_expected = all(ops.get(name, 0) == n for name, n in allowed.items() if name != "Query") and all(
            name in allowed and count <= allowed[name] for name, count in ops.items()
        )
        per_request_ms = large["ms"] / large["requests"]
        modelled_ms = per_request_ms * large["requests"]
        key, span = f"coordinator.{job}", f"{large['due_items']:,} vs {small['due_items']:,} due items"
        figures += [
            Figure(
                f"{key}.requests_per_tick",
                f"{job}: coordinator requests per tick, {span} ({large['partitions']} partitions)",
                "requests",
                large["requests"],
                small["requests"],
                f"{small['due_items']:,} due items",
                target=f"flat: claim + completion + {sends} SendMessageBatch (+ the last-success query)",
                met=large["requests"] == small["requests"] and as_expected,
            ),
            Figure(
                f"{key}.ms_per_tick",
                f"{job}: coordinator time per tick, {span}, +{sizes.added_latency_ms:g} ms per request",
                "ms",
                large["ms"],
                small["ms"],
                f"{small['due_items']:,} due items",
            ),
            Figure(
                f"{key}.ms_per_tick_1m_modelled",
                f"{job}: coordinator time per tick at 1M due items, modelled: the {large['requests']} requests "
                f"measured at {large['due_items']:,} due items x the {per_request_ms:.1f} ms per request "
                "measured there (handler time included)",
                "ms",
                modelled_ms,
                large["ms"],
                f"measured at {large['due_items']:,} due items",
            ),
        ]
        details[job] = {
            "measured": rows,
            "modelled_1m": {
                "items": MODELLED_ITEMS,
                "requests": large["requests"],
                "ms": round(modelled_ms, 1),
                "model": "the coordinator reads no item: requests(1M) = requests measured at the largest size; "
                "time(1M) = those requests x the per-request time measured there",
            },
        }
    return figures, details


def whole_tick(harness: Harness, job: str, items: int, *, workers: int, concurrency: int) -> dict[str, Any]:
    """A fanned-out tick from coordinator to finisher, metered (untimed); its counts and units."""
    harness.reset_tables()
    harness.seed(workload(job, items), in_process=True)
    run = run_whole_tick(harness, job, workers=workers, concurrency=concurrency, write_units=True)
    if run.applied != items:
        raise BenchError(f"{job}: the fanned-out tick ended {run.ledger}, expected {items} items applied")
    writes = run.measured.writes
    assert writes is not None
    return {
        "items": items,
        "invocations": run.invocations,
        "requests": dict(sorted(run.operations.items())),
        "write_units": writes.total,
        "cancelled_write_units": writes.cancelled_write_units,
        "wcu_by_table": dict(writes.by_table),
        "wcu_by_index": dict(writes.by_index),
        "poller_requests": run.poller_requests,
        "ledger": run.ledger,
    }


def _added(*tallies: Mapping[str, float]) -> dict[str, float]:
    total: dict[str, float] = {}
    for tally in tallies:
        for name, units in tally.items():
            total[name] = total.get(name, 0.0) + units
    return total


def measure_per_item(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {}
    items = sizes.batching_items
    for job in (WINDOW_JOB, CLEANUP_JOB):
        tick = whole_tick(harness, job, items, workers=1, concurrency=1)
        harness.reset_tables()
        harness.seed(workload(job, items), in_process=True)
        loop = harness.sequential_loop(job, harness.tick(job), write_units=True)
        if effect_of(job, loop.result) != items:
            raise BenchError(f"{job}: the sequential loop did {loop.result}")
        fanned_requests = sum(tick["requests"].values())
        key, label = f"fanned_out.{job}.per_item", f"{items:,} items, coordinator + workers + finisher"
        loop_label = "sequential loop on the same items"
        figures += [
            Figure(
                f"{key}.requests",
                f"{job}: requests per item, fanned out ({label})",
                "requests",
                fanned_requests / items,
                loop.requests / items,
                loop_label,
            ),
            Figure(
                f"{key}.write_units",
                f"{job}: write units per item, fanned out ({label})",
                "WCU",
                tick["write_units"] / items,
                loop.write_units / items,
                loop_label,
            ),
        ]
        details[job] = {
            "fanned_out": tick,
            "loop": {
                "requests": dict(loop.operations),
                "write_units": loop.write_units,
                "write_units_by_table": dict(loop.writes.by_table) if loop.writes else {},
            },
        }
    return figures, details
