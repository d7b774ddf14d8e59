"""2. Scale: requests and read units of one whole tick (coordinator, workers, finisher) while the
table grows and the work stays fixed."""

from __future__ import annotations

from typing import Any

from clockless_tools.bench.harness import Harness, expected_effect
from clockless_tools.bench.moto_patches import moto_capacity_is_size_based
from clockless_tools.bench.results import CLEANUP_JOB, SCALE_RATIO_TARGET, WINDOW_JOB, BenchError, BenchSizes, Figure
from clockless_tools.bench.rig import run_whole_tick
from clockless_tools.bench.workloads import Workload
from window_generation.repository import ProgramModel


def measure_scale(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {}
    harness.check_in_process_items_match_the_repositories()
    for job in (WINDOW_JOB, CLEANUP_JOB):
        rows: list[dict[str, Any]] = []
        for table_items in sizes.scale_table_items:
            workload = (
                Workload.programs_table(sizes.scale_work, table_items)
                if job == WINDOW_JOB
                else Workload.sessions_table(sizes.scale_work, table_items)
            )
            harness.reset_tables()
            seed_seconds = harness.seed(workload, in_process=True)
            measured = run_whole_tick(harness, job, workers=1)
            if measured.applied != expected_effect(job, workload):
                raise BenchError(f"{job}: the tick applied {measured.applied}, the workload needs {workload}")
            rows.append(
                {
                    "table_items": table_items,
                    "work": expected_effect(job, workload),
                    "requests": measured.requests,
                    "operations": dict(measured.operations),
                    "read_units": measured.read_units,
                    "wall_ms": round(measured.seconds * 1000, 1),
                    "moto_empty_index_query_ms": round(harness.time_empty_index_query(job) * 1000, 1),
                    "seed_seconds": round(seed_seconds, 2),
                }
            )
        if job == WINDOW_JOB:
            details["moto_consumed_capacity"] = moto_capacity_is_size_based(
                harness.client,
                harness.window_settings.programs_table,
                ProgramModel.due_index.Meta.index_name,
                "due_shard",
            )
        smallest, largest = rows[0], rows[-1]
        span = f"{largest['table_items']:,} vs {smallest['table_items']:,} items"
        for metric, unit in (("requests", "requests"), ("read_units", "RCU")):
            ratio = largest[metric] / smallest[metric]
            figures.append(
                Figure(
                    f"scale.{job}.{metric}_per_tick",
                    f"{job}: {metric.replace('_', ' ')} per tick, {span}",
                    unit,
                    largest[metric],
                    smallest[metric],
                    f"same work, {smallest['table_items']:,} items",
                    target=f"ratio ≤ {SCALE_RATIO_TARGET}",
                    met=ratio <= SCALE_RATIO_TARGET,
                )
            )
        figures.append(
            Figure(
                f"scale.{job}.wall_ms_per_tick",
                f"{job}: wall time per tick on moto, {span}",
                "ms",
                largest["wall_ms"],
                smallest["wall_ms"],
                f"same work, {smallest['table_items']:,} items",
            )
        )
        details[job] = {"work_per_tick": sizes.scale_work, "sizes": rows}
    details["seeded"] = "straight into moto's state in this process; each tick over HTTP"
    return figures, details
