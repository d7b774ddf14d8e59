"""4. Items per second against the number of concurrent workers (1, 2, 4, 8, 16), with 8 ms added
to every request: the kit's worker handler fed from the work queue by that many pollers, one
partition message per invocation, one lane each (so workers are the only variable; batching shows
lanes). Scaling efficiency = rate(n) / (n * rate(1)).

On Lambda each worker has its own CPU; here all share this machine's cores with moto's server,
so the curve flattens where the process runs out of CPU, not where DynamoDB would. The process's
CPU seconds per item and its CPU use (CPU seconds / wall seconds) are recorded beside each point
to show which limit was hit; the 1M model (batching) counts workers as independent.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.bench.batching import workload_for
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.latency import added_latency
from clockless_tools.bench.results import WINDOW_JOB, BenchError, BenchSizes, Figure
from clockless_tools.bench.rig import FanOutRig, counters_of

WORKER_COUNTS: Final = (1, 2, 4, 8, 16)


@dataclass(frozen=True, slots=True)
class Point:
    workers: int
    items: int
    seconds: float
    cpu_seconds: float  # the whole process: workers and moto's server
    client_cpu_seconds: float  # the workers' threads alone

    @property
    def rate(self) -> float:
        return self.items / self.seconds


def measure_scaling(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    job = WINDOW_JOB
    partitions = 0
    items = sizes.scaling_items
    points: list[Point] = []
    for workers in WORKER_COUNTS:
        harness.reset_tables()
        harness.seed(workload_for(job, items), in_process=True)
        rig = FanOutRig(harness, job, concurrency=1)
        try:
            with rig.active():
                rig.start()
                with added_latency(sizes.added_latency_ms):
                    cpu, started = time.process_time(), time.perf_counter()
                    rig.drain(workers)
                    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
            entry = counters_of(rig.tick_entry())
        finally:
            rig.close()
        applied = (entry["summary"] or {}).get("applied")
        if entry["status"] != "succeeded" or applied != items:
            raise BenchError(f"scaling: {workers} worker(s) ended the tick {entry}, expected {items} applied")
        partitions = entry["partitions_total"]
        points.append(Point(workers, items, seconds, cpu_seconds, rig.client_cpu_seconds))
    one = points[0]
    figures = [
        Figure(
            f"scaling.{job}.workers_{point.workers}.items_per_second",
            f"{job}: items/s with {point.workers} concurrent worker(s), {items:,} items over {partitions} partitions, "
            f"+{sizes.added_latency_ms:g} ms per request "
            f"(efficiency {point.rate / (point.workers * one.rate):.0%})",
            "items/s",
            point.rate,
            one.rate * point.workers,
            f"{point.workers} x one worker's rate (linear scaling)",
        )
        for point in points[1:]
    ]
    details = {
        "job": job,
        "items": items,
        "partitions": partitions,
        "cpus": os.cpu_count(),
        "worker": "the kit's worker (lease, pages, batch writer with one lane, cursor, finisher), fed one "
        "partition message per invocation; the tick's coordinator ran first, untimed",
        "points": [
            {
                "workers": point.workers,
                "items_per_second": round(point.rate, 1),
                "efficiency": round(point.rate / (point.workers * one.rate), 3),
                "cpu_ms_per_item": round(point.cpu_seconds / point.items * 1000, 3),
                "client_cpu_ms_per_item": round(point.client_cpu_seconds / point.items * 1000, 3),
                "cpu_use": round(point.cpu_seconds / point.seconds, 2),
            }
            for point in points
        ],
    }
    return figures, details
