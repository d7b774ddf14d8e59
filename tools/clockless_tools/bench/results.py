"""The results of a bench run: its sizes, each figure beside its baseline, and bench/results.json's shape."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from clockless_tools.bench.spread import Estimate
from clockless_tools.errors import ToolError

RESULTS_SCHEMA: Final = 1
WINDOW_JOB: Final = "window-generation"
CLEANUP_JOB: Final = "session-cleanup"
# The ticks the README's demo shows; fixed, so every run lays its data out around the same dates.
WINDOW_TICK: Final = datetime(2026, 11, 28, 14, 0, tzinfo=UTC)
CLEANUP_TICK: Final = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
TENANT: Final = "tenant-bench"

KIT_ADDED_REQUESTS_TARGET: Final = 4
SCALE_RATIO_TARGET: Final = 1.1


class BenchError(ToolError, RuntimeError):
    """The bench could not measure what it set out to (wrong effect, inconsistent counts...)."""


@dataclass(frozen=True, slots=True)
class BenchSizes:
    """How much each measurement does. `FULL` is `make bench`; `QUICK` keeps the machinery tested."""

    first_deliveries: int = 10
    duplicates: int = 30
    scale_table_items: tuple[int, ...] = (1_000, 10_000, 100_000)
    scale_work: int = 50
    throughput_programs: int = 10_000
    # Items per job for sequential loop against batched transactions (issue 16 measured 2,000).
    batching_items: int = 2_000
    # Added before every request in batching and scaling (issue 16 measured with 8 ms).
    added_latency_ms: float = 8.0
    # Due items under one coordinator tick: requests must stay flat (1M is modelled from the largest).
    coordinator_due_items: tuple[int, ...] = (1_000, 100_000)
    # Items spread over the partitions for 1 to 16 concurrent workers.
    scaling_items: int = 4_000
    # The sequential loop's time per item for the night model (with the added latency).
    night_loop_items: int = 200
    # The model checked against the capacity-faithful emulator: items per scenario, limits / scale.
    # 1,200 spread items at limits / 100 take one to two minutes a scenario here (the limits are
    # enforced in real time); `--check-items` and `--check-scale` run it larger on a larger machine.
    # A lower scale keeps a transaction a smaller part of what a partition takes in a second (at
    # / 200 one of 99 deletes is 10 s of a partition), which is what the emulator's granularity costs.
    check_items: int = 1_200
    check_one_tenant_items: int = 240
    check_scale: float = 100.0
    # Draws of the kit's backoff for each targeted night run in whole transactions at its p95
    # placement (bench/lumps.py; 0: not run). About 2 s a draw per 1M items.
    night_transaction_seeds: int = 3
    # The night's per-item costs are measured on a tick giving each partition at least this many
    # items (what 2,000 over 16 shards gave when the model was first fed; bench/night.py).
    night_items_per_partition: int = 125
    imports: int = 10
    # Cold start rounds go on, five at a time, until each ratio's 95 % interval clears its target.
    imports_max: int = 40
    sam_build: bool = True
    # An untimed first round, so making clients, connections and imports is not timed.
    warm_up: bool = True


FULL: Final = BenchSizes()
QUICK: Final = BenchSizes(
    first_deliveries=1,
    duplicates=1,
    scale_table_items=(40, 160),
    scale_work=4,
    throughput_programs=25,
    batching_items=60,
    added_latency_ms=1.0,
    scaling_items=64,
    night_loop_items=10,
    # the capacity check keeps the sizes it was first checked at (CI's slow suite runs it): smaller
    # ticks end in a transaction or two per partition, where the kit's retry timing, not the
    # limits, sets the time (so its limits stay divided by 200, and one tenant has 240 items: its
    # 16 buckets take 60 in under 10 s)
    check_items=300,
    check_one_tenant_items=240,
    check_scale=200.0,
    # tests/unit/test_bench_model.py runs a small night in transactions; a 10M one takes a minute
    night_transaction_seeds=0,
    night_items_per_partition=0,
    coordinator_due_items=(20, 80),
    imports=1,
    imports_max=1,
    sam_build=False,
    warm_up=False,
)


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured value beside its baseline from the same run."""

    key: str
    label: str
    unit: str
    value: float
    baseline: float | None
    baseline_label: str
    target: str = ""
    met: bool | None = None
    # For a timing: the ratio's median over rounds, each round's value against its own baseline,
    # with its 95 % interval (bench/spread.py); `met` is None when the interval straddles the target.
    ratio_estimate: Estimate | None = None

    @property
    def ratio(self) -> float | None:
        if self.ratio_estimate is not None:
            return self.ratio_estimate.median
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    def as_dict(self) -> dict[str, Any]:
        ratio = self.ratio
        return {
            "label": self.label,
            "unit": self.unit,
            "value": _round(self.value),
            "baseline": None if self.baseline is None else _round(self.baseline),
            "baseline_label": self.baseline_label,
            "ratio": None if ratio is None else round(ratio, 3),
            "target": self.target,
            "met": self.met,
            **(
                {}
                if self.ratio_estimate is None
                else {
                    "ratio_interval": [round(self.ratio_estimate.low, 3), round(self.ratio_estimate.high, 3)],
                    "samples": self.ratio_estimate.samples,
                }
            ),
        }


def _round(value: float) -> float:
    return round(value, 3) if isinstance(value, float) and not value.is_integer() else value


@dataclass
class BenchResults:
    figures: list[Figure] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    def add(self, section: str, figures: Iterable[Figure], details: Mapping[str, Any]) -> None:
        self.figures.extend(figures)
        self.details[section] = dict(details)

    def figure(self, key: str) -> Figure:
        for candidate in self.figures:
            if candidate.key == key:
                return candidate
        raise KeyError(key)

    @property
    def missed(self) -> list[Figure]:
        return [f for f in self.figures if f.met is False]

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": RESULTS_SCHEMA,
            "environment": self.environment,
            "figures": {f.key: f.as_dict() for f in self.figures},
            "details": self.details,
        }

    def merged_into(self, document: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
        """`document` (a results file's contents) with the sections this run measured replaced by
        this run's, figures and details in `order` of sections. Figures are keyed `<section>.…`,
        so a section's old figures go with it; `environment.sections_run` says which run wrote
        which section."""
        measured = set(self.details)
        mine = self.as_dict()
        figures = {
            key: figure for key, figure in document.get("figures", {}).items() if key.split(".", 1)[0] not in measured
        } | mine["figures"]
        details = {**document.get("details", {}), **mine["details"]}
        rank = {section: index for index, section in enumerate(order)}
        environment = dict(document.get("environment", {}))
        runs = dict(environment.pop("sections_run", {}))
        runs |= {section: {"seconds": mine["environment"].get("seconds")} for section in measured}
        return {
            "schema": RESULTS_SCHEMA,
            # The top-level seconds stay the full run's; a partial run's are under sections_run.
            "environment": {
                **environment,
                **{name: value for name, value in mine["environment"].items() if name != "seconds"},
                "sections_run": runs,
            },
            "figures": dict(sorted(figures.items(), key=lambda entry: rank.get(entry[0].split(".", 1)[0], len(rank)))),
            "details": dict(sorted(details.items(), key=lambda entry: rank.get(entry[0], len(rank)))),
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8")
