"""One measured action: its requests (counted exactly), read units, write units and wall time."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from clockless_tools.bench.read_units import meter_dynamodb
from clockless_tools.bench.results import BenchError
from clockless_tools.bench.write_units import WriteTally, meter_writes
from clockless_tools.local.botocore_hooks import count_requests


@dataclass(frozen=True, slots=True)
class Measured:
    """One action: its requests (counted exactly), the tables it touched, read and write units, wall time."""

    requests: int
    operations: Mapping[str, int]
    tables: frozenset[str]
    domain_requests: int
    read_units: float
    seconds: float
    result: Any
    writes: WriteTally | None  # when asked for: metering writes reads moto's state, which takes time

    @property
    def write_units(self) -> float:
        """Base tables and their indexes; a cancelled transaction's are apart, in `writes`."""
        if self.writes is None:
            raise BenchError("write units were not metered for this action (measure(..., write_units=True))")
        return self.writes.total


def measure(
    action: Callable[[], Any],
    *,
    bookkeeping_tables: Iterable[str] = (),
    write_units: bool = False,
    allow_other_services: bool = False,
) -> Measured:
    """Run `action` once, counting its requests and read units; with `write_units`, its write
    units too (not for timings: the meter reads moto's state around every write). Requests to
    other services than DynamoDB are an error unless allowed (a fanned-out tick uses SQS); they
    are counted in `requests` and `operations`, never in read or write units."""
    writes_meter = meter_writes() if write_units else contextlib.nullcontext(None)
    with count_requests() as counter, meter_dynamodb() as meter, writes_meter as writes:
        started = time.perf_counter()
        result = action()
        seconds = time.perf_counter() - started
    if counter.total != len(meter.calls) and not allow_other_services:
        raise BenchError(
            f"{counter.total - len(meter.calls)} request(s) other than DynamoDB: {dict(counter.operations)}"
        )
    return Measured(
        requests=counter.total,
        operations=dict(sorted(counter.operations.items())),
        tables=meter.tables,
        domain_requests=meter.requests_outside(bookkeeping_tables),
        read_units=meter.read_units,
        seconds=seconds,
        result=result,
        writes=writes,
    )
