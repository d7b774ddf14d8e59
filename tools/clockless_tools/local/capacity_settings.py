"""What the capacity emulator (`clockless_tools.local.capacity`) enforces: its settings, read from
the command line's words, and a one-line description of them. The figures and their sources are
in `capacity.py` and `partitions.py`."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from clockless_tools.local.partitions import (
    BURST_SECONDS,
    PARTITION,
    Limits,
    Throughput,
)

NEW_ON_DEMAND: Final = Throughput(4_000.0, 12_000.0)  # a new on-demand table or GSI, per second
TABLE_QUOTA: Final = Throughput(40_000.0, 40_000.0)  # per on-demand table (service quota default)
PEAK_GROWTH_SECONDS: Final = 1_800.0  # a peak sustained this long ago may be doubled at once


class Start(enum.StrEnum):
    COLD = "cold"  # a new on-demand table and index: 4,000 write and 12,000 read units per second
    WARM = "warm"  # the declared WarmThroughput (or `warm_write_units`)


@dataclass(frozen=True)
class CapacitySettings:
    """What the emulator enforces. Rates and sizes are DynamoDB's; `scale` divides the rates."""

    start: Start = Start.COLD
    scale: float = 1.0
    # warm start: write units per second for every table and index not named in `declared`
    warm_write_units: float = NEW_ON_DEMAND.write
    # warm start: per table name or "table/index", the declared WarmThroughput write units
    declared: Mapping[str, float] = field(default_factory=dict)
    # warm start: read units per second, for every table and index and as declared per one
    warm_read_units: float = NEW_ON_DEMAND.read
    declared_reads: Mapping[str, float] = field(default_factory=dict)
    # tables and indexes in provisioned mode: their throughput, whatever the start
    provisioned: Mapping[str, Throughput] = field(default_factory=dict)
    # bytes each table or index holds on DynamoDB (what its partitions must also hold); unnamed: 0
    sizes: Mapping[str, float] = field(default_factory=dict)
    partition: Throughput = PARTITION
    new_on_demand: Throughput = NEW_ON_DEMAND
    table_quota: Throughput = TABLE_QUOTA
    growth_seconds: float = PEAK_GROWTH_SECONDS
    burst_seconds: float = BURST_SECONDS
    # split for heat: a partition refusing writes for this long, with two keys or more, is split (None: never)
    split_after_seconds: float | None = None

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"capacity scale must be positive, got {self.scale!r}")
        rates = (("warm write units", self.warm_write_units), ("warm read units", self.warm_read_units))
        for name, value in (*rates, *self.declared.items(), *self.declared_reads.items()):
            if not value > 0:
                raise ValueError(f"{name}: units per second must be positive, got {value!r}")
        if self.split_after_seconds is not None and not self.split_after_seconds >= 0:
            raise ValueError(f"split for heat: seconds must be 0 or more, got {self.split_after_seconds!r}")

    def starting(self, resource: str) -> Throughput:
        """What a table or "table/index" serves from the start (unscaled)."""
        if resource in self.provisioned:
            return self.provisioned[resource]
        new, quota = self.new_on_demand, self.table_quota
        if self.start is Start.COLD:
            return new
        write = self.declared.get(resource, self.warm_write_units)
        read = self.declared_reads.get(resource, self.warm_read_units)
        return Throughput(min(max(write, new.write), quota.write), min(max(read, new.read), quota.read))

    def starting_rate(self, resource: str) -> float:
        """Write units per second a table or "table/index" serves from the start (unscaled)."""
        return self.starting(resource).write

    def limits(self, resource: str) -> Limits:
        fixed = resource in self.provisioned
        start = self.starting(resource)
        return Limits(
            start=start,
            quota=start if fixed else self.table_quota,
            fixed=fixed,
            scale=self.scale,
            size_bytes=float(self.sizes.get(resource, 0.0)),
            growth_seconds=self.growth_seconds,
            burst_seconds=self.burst_seconds,
            partition=self.partition,
        )


def capacity_settings(
    start: str | None,
    scale: float = 1.0,
    warm_units: float | None = None,
    declared: Mapping[str, float] | None = None,
    split_after_seconds: float | None = None,
) -> CapacitySettings | None:
    """Settings from the command line's words: None (no `start`) leaves moto unlimited."""
    if start is None:
        return None
    try:
        chosen = Start(start)
    except ValueError:
        raise ValueError(f"capacity must be one of {', '.join(s.value for s in Start)}, got {start!r}") from None
    return CapacitySettings(
        start=chosen,
        scale=scale,
        warm_write_units=NEW_ON_DEMAND.write if warm_units is None else warm_units,
        declared=dict(declared or {}),
        split_after_seconds=split_after_seconds,
    )


def describe_settings(settings: CapacitySettings | None) -> str:
    """One line: what is enforced, at DynamoDB's figures and as scaled."""
    if settings is None:
        return "none (moto's unlimited throughput)"
    new = settings.new_on_demand
    start = (
        f"new tables and indexes at {new.write:,.0f} write and {new.read:,.0f} read"
        if settings.start is Start.COLD
        else f"warm tables and indexes at {settings.warm_write_units:,.0f} write (or as declared)"
    )
    split = (
        "no split for heat"
        if settings.split_after_seconds is None
        else f"a hot partition split after {settings.split_after_seconds:g} s"
    )
    return (
        f"{settings.start.value}: {start} units/s, partitions of {settings.partition.write:,.0f} write and "
        f"{settings.partition.read:,.0f} read units/s placed by key hash, {settings.burst_seconds:g} s of burst, "
        f"{split}, {settings.table_quota.write:,.0f} per table; all divided by scale {settings.scale:g}"
    )
