"""`clockless bench run`: every measurement in one process, into bench/results.json."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Final, TextIO

from clockless_tools.bench.artifacts import measure_artifacts
from clockless_tools.bench.batching import measure_batching
from clockless_tools.bench.capacity_check import measure_capacity_check
from clockless_tools.bench.cold_start import measure_cold_start, source_setup
from clockless_tools.bench.fanned_out import measure_coordinator, measure_per_item
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.night import measure_night
from clockless_tools.bench.overhead import measure_overhead
from clockless_tools.bench.results import FULL, BenchError, BenchResults, BenchSizes, Figure
from clockless_tools.bench.scale import measure_scale
from clockless_tools.bench.scaling import measure_scaling
from clockless_tools.bench.throughput import measure_throughput
from clockless_tools.bench.versus_stock import measure_versus_stock
from clockless_tools.local.dynamodb import (
    EmbeddedDynamoDB,
    delete_tables,
)
from clockless_tools.local.moto_transactions import transactions_snapshot_touched_items
from clockless_tools.template.model import Template

# What `make bench` measures, in order; `clockless bench run --only` picks some.
SECTIONS: Final = (
    "overhead",
    "versus_stock",
    "scale",
    "throughput",
    "batching",
    "scaling",
    "coordinator",
    "fanned_out",
    "night",
    "capacity_check",
    "artifacts",
    "cold_start",
)


def environment_facts(sizes: BenchSizes) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "moto": importlib.metadata.version("moto"),
        "botocore": importlib.metadata.version("botocore"),
        "dynamodb": "moto's server in the bench process, over loopback HTTP",
        "moto_transactions": "snapshot only the items a transaction names (clockless_tools/local/moto_transactions.py)",
        "sizes": {name: getattr(sizes, name) for name in BenchSizes.__dataclass_fields__},
    }


Measurement = Callable[[Harness, BenchSizes], tuple[list[Figure], dict[str, Any]]]
# The sections measured on the embedded DynamoDB, in order: what each says it does, and how.
_TICK_SECTIONS: Final[dict[str, tuple[Callable[[BenchSizes], str], Measurement]]] = {
    "overhead": (lambda _: "1/5 kit overhead per tick", measure_overhead),
    "versus_stock": (
        lambda _: "1b/5 the kit against stock Powertools @idempotent: requests and write units",
        lambda harness, _sizes: measure_versus_stock(harness),
    ),
    "scale": (
        lambda sizes: (
            f"2/5 cost per tick as the table grows: {', '.join(f'{n:,}' for n in sizes.scale_table_items)} items"
        ),
        measure_scale,
    ),
    "throughput": (
        lambda sizes: f"3/5 throughput at {sizes.throughput_programs:,} due programs, built and naive",
        measure_throughput,
    ),
    "batching": (
        lambda sizes: f"3b/5 sequential loop against batched transactions, {sizes.batching_items:,} items per job",
        measure_batching,
    ),
    "scaling": (
        lambda sizes: f"3c/5 items/s against 1 to 16 concurrent workers, {sizes.scaling_items:,} items",
        measure_scaling,
    ),
    "coordinator": (
        lambda sizes: (
            "3d/5 coordinator requests and time per tick at "
            + ", ".join(f"{n:,}" for n in sizes.coordinator_due_items)
            + " due items (1M modelled)"
        ),
        measure_coordinator,
    ),
    "fanned_out": (
        lambda sizes: f"3e/5 a fanned-out tick, coordinator to finisher, per item: {sizes.batching_items:,} items",
        measure_per_item,
    ),
    "night": (
        lambda sizes: "3f/5 a night on DynamoDB, modelled: 1M and 10M items per job, and its cost per 1M items",
        measure_night,
    ),
    "capacity_check": (
        lambda sizes: (
            f"3g/5 the model against the capacity-faithful emulator (limits / {sizes.check_scale:g}): "
            f"{sizes.check_items:,} items spread, {sizes.check_one_tenant_items:,} under one tenant, cold and warm"
        ),
        measure_capacity_check,
    ),
}


def run_bench(
    template: Template,
    *,
    sizes: BenchSizes = FULL,
    endpoint: str | None = None,
    sam: Path | None = None,
    work_dir: Path | None = None,
    function_output: TextIO | None = None,
    progress: Callable[[str], None] = lambda _message: None,
    only: Collection[str] = SECTIONS,
) -> BenchResults:
    """Every measurement, in one process, or the `only` sections named (`SECTIONS`): cold start
    without artifacts measures the source tree alone. `endpoint` reuses a running in-process moto
    server."""
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        raise BenchError(f"no bench section {', '.join(unknown)}; the sections are {', '.join(SECTIONS)}")
    results = BenchResults(environment=environment_facts(sizes))
    started = time.perf_counter()
    redirect = contextlib.redirect_stdout(function_output) if function_output else contextlib.nullcontext()
    server = contextlib.nullcontext(None) if endpoint else EmbeddedDynamoDB()
    with redirect, server as db, transactions_snapshot_touched_items():
        endpoint = endpoint or db.endpoint  # type: ignore[union-attr]
        harness = Harness(template, endpoint)
        harness.server = db
        try:
            for section, (describe, measure_section) in _TICK_SECTIONS.items():
                if section in only:
                    progress(describe(sizes))
                    results.add(section, *measure_section(harness, sizes))
            setups = [source_setup(template)]
            if "artifacts" in only and sizes.sam_build and sam is not None and sam.exists():
                progress("4/5 sam build, the layer without what the runtime ships, a tick on each")
                work = (work_dir or template.root / "bench" / "work.tmp").resolve()
                figures, details, built_setups = measure_artifacts(harness, sam.resolve(), work, sizes)
                results.add("artifacts", figures, details)
                setups += built_setups
            elif "artifacts" in only:
                reason = "SAM CLI not found (make bench installs it)" if sizes.sam_build else "not asked for"
                results.add("artifacts", [], {"skipped": reason})
            if "cold_start" in only:
                rounds = (
                    f"{sizes.imports} to {sizes.imports_max}" if sizes.imports_max > sizes.imports else sizes.imports
                )
                progress(
                    f"5/5 cold start: each handler imported {rounds} times per setup, until the ratios are decided"
                )
                environments = {lid: harness.runtime.environment(lid) for lid in template.functions}
                results.add("cold_start", *measure_cold_start(template, setups, sizes, environments))
        finally:
            with contextlib.suppress(Exception):
                delete_tables(template, endpoint)
    results.environment["seconds"] = round(time.perf_counter() - started, 1)
    return results
