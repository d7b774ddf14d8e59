"""1. Kit overhead: requests, read units and wall time of a first and a duplicate delivery against the job alone.

Both jobs' scheduled functions are coordinators now: the job alone sends the tick's partition
messages (`SendMessageBatch`, 10 a request) and reads no item; the kit adds the claim and the
completion (and cleanup's last-success query)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.bench.harness import Harness, executed, median_ms, same
from clockless_tools.bench.results import (
    CLEANUP_JOB,
    KIT_ADDED_REQUESTS_TARGET,
    WINDOW_JOB,
    BenchError,
    BenchSizes,
    Figure,
)
from clockless_tools.bench.workloads import Workload

OVERHEAD_WORKLOADS: Final = {
    # 2 due programs, one a period behind: 3 windows (the README's example), among 5 others.
    WINDOW_JOB: Workload(due_programs=2, catching_up=1, not_due_programs=3, ended_programs=2),
    CLEANUP_JOB: Workload(expired_empty_sessions=3, recent_empty_sessions=2, sessions_in_use=4),
}


_OVERHEAD_METRICS: Final = {
    "requests": ("requests (DynamoDB and SQS)", "requests"),
    "read_units": ("read units", "RCU"),
    "domain_requests": ("requests to domain tables", "requests"),
    "median_ms": ("median wall time", "ms"),
}


@dataclass(frozen=True, slots=True)
class _OverheadCase:
    job: str
    key: str
    label: str
    baseline_label: str

    def figure(
        self, metric: str, value: float, baseline: float, *, target: str = "", met: bool | None = None
    ) -> Figure:
        what, unit = _OVERHEAD_METRICS[metric]
        return Figure(
            f"overhead.{self.job}.{self.key}.{metric}",
            f"{self.job}: {self.label}, {what}",
            unit,
            value,
            baseline,
            self.baseline_label,
            target=target,
            met=met,
        )


def measure_overhead(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {}
    for job, workload in OVERHEAD_WORKLOADS.items():
        tick = harness.tick(job)
        bare_firsts, kit_firsts = [], []
        for timed in [False] * sizes.warm_up + [True] * sizes.first_deliveries:
            harness.reset_tables()
            harness.seed(workload, in_process=True)
            bare = harness.call_bare(job, tick)
            harness.reset_tables()
            harness.seed(workload, in_process=True)
            kit = harness.deliver(job, tick)
            if timed:
                bare_firsts.append(bare)
                kit_firsts.append(kit)
        for bare, kit in zip(bare_firsts, kit_firsts, strict=True):
            if dict(bare.result) != dict(executed(job, kit)):
                raise BenchError(f"{job}: bare and kit runs did different work: {bare.result} != {kit.result}")
        # Duplicates of the tick the last kit delivery completed; the baseline is the bare
        # function delivered again on the same state (what a job without the kit pays).
        duplicates, redeliveries = [], []
        for _ in range(sizes.duplicates):
            duplicates.append(harness.deliver(job, harness.tick(job, attempt=2)))
            redeliveries.append(harness.call_bare(job, tick))
        if any(d.result.get("outcome") != "duplicate" for d in duplicates):
            raise BenchError(f"{job}: a duplicate delivery was not suppressed: {duplicates[-1].result}")

        bare_ops = same(job, "bare first-delivery requests", [m.operations for m in bare_firsts])
        kit_ops = same(job, "first-delivery requests", [m.operations for m in kit_firsts])
        duplicate_ops = same(job, "duplicate requests", [m.operations for m in duplicates])
        redelivery_ops = same(job, "bare redelivery requests", [m.operations for m in redeliveries])
        bare, kit, duplicate, redelivery = bare_firsts[-1], kit_firsts[-1], duplicates[-1], redeliveries[-1]
        added = kit.requests - bare.requests
        first = _OverheadCase(job, "first_delivery", "first delivery", "same function without the kit")
        again = _OverheadCase(job, "duplicate", "duplicate delivery", "function without the kit, delivered again")
        figures += [
            first.figure(
                "requests",
                kit.requests,
                bare.requests,
                target=f"≤ baseline + {KIT_ADDED_REQUESTS_TARGET}",
                met=added <= KIT_ADDED_REQUESTS_TARGET,
            ),
            first.figure("read_units", kit.read_units, bare.read_units),
            first.figure("median_ms", median_ms(kit_firsts), median_ms(bare_firsts)),
            again.figure(
                "requests", duplicate.requests, redelivery.requests, target="= 1", met=duplicate.requests == 1
            ),
            again.figure(
                "domain_requests",
                duplicate.domain_requests,
                redelivery.domain_requests,
                target="= 0",
                met=duplicate.domain_requests == 0,
            ),
            again.figure("median_ms", median_ms(duplicates), median_ms(redeliveries)),
        ]
        details[job] = {
            "workload": _workload_dict(workload),
            "summary": dict(bare.result),
            "operations": {
                "bare_first_delivery": bare_ops,
                "kit_first_delivery": kit_ops,
                "kit_added": dict(sorted((Counter(kit_ops) - Counter(bare_ops)).items())),
                "kit_duplicate": duplicate_ops,
                "bare_redelivery": redelivery_ops,
            },
            "duplicate_tables": sorted(duplicate.tables),
            "first_deliveries_timed": len(kit_firsts),
            "duplicates_timed": len(duplicates),
        }
    return figures, details


def _workload_dict(workload: Workload) -> dict[str, int]:
    return {name: getattr(workload, name) for name in Workload.__dataclass_fields__}
