"""The values a partition run passes around: its lease, its failed keys, its counters.

What taking its lease found, the failed keys its record lists, the counters of its items, and the
error of a lease another worker took over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clockless.errors import ClocklessError


class LeaseLost(ClocklessError, RuntimeError):
    """Another worker holds the partition now: this one's lease ran out."""


class TickUnclaimed(ClocklessError, RuntimeError):
    """The tick entry a transaction checked was not claimed by a fan-out coordinator; nothing was written."""


@dataclass(frozen=True, slots=True)
class Lease:
    """What acquiring a partition found."""

    acquired: bool
    done: bool = False
    cursor: dict[str, Any] | None = None
    failed_items: frozenset[str] = frozenset()
    holder_until_ms: int = 0
    # no record (and none was made): a continuation of a partition that never started
    missing: bool = False
    # the tick entry that failed the trust check (clockless.fanout.trust); nothing was written
    untrusted: dict[str, Any] | None = None
    # continuations this partition was handed on to because of throttling, before this run
    throttle_continuations: int = 0


@dataclass(frozen=True, slots=True)
class FailedKeys:
    failed: frozenset[str]
    replayed: frozenset[str]


@dataclass(slots=True)
class Counters:
    applied: int = 0
    already_done: int = 0
    failed: int = 0

    @property
    def found(self) -> int:
        return self.applied + self.already_done + self.failed

    def add(self, other: Counters) -> None:
        self.applied += other.applied
        self.already_done += other.already_done
        self.failed += other.failed

    def as_summary(self) -> dict[str, int]:
        return {"found": self.found, "applied": self.applied, "already_done": self.already_done, "failed": self.failed}
