"""What a scheduled function declares about its runs, next to its schedule:

    Metadata:
      clockless:
        grace_minutes: 120               # a tick without success this long after it is missed
        expected_duration_seconds: 60    # p99 Duration above this raises an alarm

A worker (`worker_of`) declares `expected_duration_seconds` (per run) and, when a partition takes
more than one run, `expected_hops`: its ticks are its coordinator's.
Read by the dead-man-alarm, duration-bound and time-budget rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function

METADATA_KEY = "clockless"
GRACE_KEY = "grace_minutes"
DURATION_KEY = "expected_duration_seconds"
HOPS_KEY = "expected_hops"


@dataclass(frozen=True)
class JobBounds:
    """What a scheduled function declares about its runs in `Metadata: clockless`."""

    grace: timedelta
    expected_duration: timedelta


def read_bounds(function: Function) -> JobBounds:
    """The function's grace and expected duration; TemplateError names the key that is wrong."""
    return JobBounds(
        timedelta(minutes=_whole_number(function, GRACE_KEY)), timedelta(seconds=_whole_number(function, DURATION_KEY))
    )


def read_expected_duration(function: Function) -> timedelta:
    """The expected duration alone: what a worker (which has no ticks of its own, so no grace) declares."""
    return timedelta(seconds=_whole_number(function, DURATION_KEY))


def read_expected_hops(function: Function) -> int:
    """A worker's runs per partition it expects (a continuation is one more); 1 when not declared."""
    return _whole_number(function, HOPS_KEY, default=1)


def _whole_number(function: Function, key: str, *, default: int | None = None) -> int:
    block = function.metadata.get(METADATA_KEY) or {}
    where = f"{function.logical_id}.Metadata.{METADATA_KEY}"
    value = block.get(key) if isinstance(block, Mapping) else None
    if value is None and default is not None:
        return default
    if value is None:
        raise TemplateError(f"{where}.{key} is not declared")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TemplateError(f"{where}.{key} must be a whole number of at least 1, got {value!r}")
    return value
