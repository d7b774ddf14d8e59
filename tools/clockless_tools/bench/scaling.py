"""4. Items per second against the number of concurrent workers (1, 2, 4, 8, 16), with 8 ms added
to every request: each worker is a thread that takes the next partition and applies it the way a
worker does. Scaling efficiency = rate(n) / (n * rate(1)).

On Lambda each worker has its own CPU; here all share this machine's cores with moto's server,
so the curve flattens where the process runs out of CPU, not where DynamoDB would. The process's
CPU seconds per item and its CPU use (CPU seconds / wall seconds) are recorded beside each point
to show which limit was hit; the 1M model (batching) counts workers as independent.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.bench.batching import KitBatches, workload_for
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.latency import added_latency
from clockless_tools.bench.rawwork import RawWork
from clockless_tools.bench.results import WINDOW_JOB, BenchError, BenchSizes, Figure

WORKER_COUNTS: Final = (1, 2, 4, 8, 16)

PartitionRun = Callable[[str, int], int]  # (tick key, partition) -> items applied


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


def run_workers(partitions: list[str], workers: int, run: Callable[[str], int]) -> tuple[int, float, float, float]:
    """`workers` threads drain the partitions; (items, wall seconds, process CPU seconds, the
    workers' own CPU seconds: the client's share, what one Lambda would spend)."""
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for partition in partitions:
        todo.put(partition)
    done: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    client_cpu: list[float] = []

    def worker() -> None:
        started = time.thread_time()
        try:
            while True:
                try:
                    partition = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    applied = run(partition)
                except BaseException as error:
                    errors.append(error)
                    return
                with lock:
                    done.append(applied)
        finally:
            with lock:
                client_cpu.append(time.thread_time() - started)

    threads = [threading.Thread(target=worker, name=f"bench-worker-{n}") for n in range(workers)]
    cpu, started = time.process_time(), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    if errors:
        raise BenchError(f"a worker failed: {errors[0]!r}") from errors[0]
    return sum(done), seconds, cpu_seconds, sum(client_cpu)


def measure_scaling(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    job = WINDOW_JOB
    shards = RawWork(harness, job).shards
    items = sizes.scaling_items
    points: list[Point] = []
    for workers in WORKER_COUNTS:
        harness.reset_tables()
        harness.seed(workload_for(job, items), in_process=True)
        tick = harness.tick(job)
        writer = KitBatches(harness, job, concurrency=1)
        with added_latency(sizes.added_latency_ms):
            applied, seconds, cpu_seconds, client_cpu = run_workers(
                [str(shard) for shard in range(shards)], workers, functools.partial(writer.run_shard, tick.key)
            )
        if applied != items:
            raise BenchError(f"scaling: {workers} worker(s) applied {applied} of {items} items")
        points.append(Point(workers, applied, seconds, cpu_seconds, client_cpu))
    one = points[0]
    figures = [
        Figure(
            f"scaling.{job}.workers_{point.workers}.items_per_second",
            f"{job}: items/s with {point.workers} concurrent worker(s), {items:,} items over {shards} partitions, "
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
        "partitions": shards,
        "cpus": os.cpu_count(),
        "worker": "the kit's batch writer, one lane per worker, over each shard",
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
