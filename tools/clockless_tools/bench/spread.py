"""Timing figures that say how sure they are: a median with its confidence interval, and a
verdict against a target only when the interval lies on one side of it.

Wall times on a shared machine move from run to run (the cold start ratio measured 1.13-1.79x
across re-runs), so a single median flips between met and missed. `make bench` repeats a timing
until the 95 % interval of its median clears the target, or stops at a cap and says it could not
decide. The interval is distribution-free (order statistics of the samples, from the binomial
distribution), so a few slow outliers widen it without moving the median.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

CONFIDENCE: Final = 0.95
MINIMUM_SAMPLES: Final = 6


@dataclass(frozen=True, slots=True)
class Estimate:
    """The median of `samples` values, with the interval that holds the true median at `CONFIDENCE`."""

    median: float
    low: float
    high: float
    samples: int

    @property
    def confident(self) -> bool:
        """Below six samples no two order statistics hold the median at 95 %: nothing is decided."""
        return self.samples >= MINIMUM_SAMPLES

    def decide(self, limit: float) -> bool | None:
        """Whether the median is at most `limit`: True or False once the interval is on one side,
        None while it straddles the limit or there are too few samples (more might decide it)."""
        if not self.confident:
            return None
        if self.high <= limit:
            return True
        if self.low > limit:
            return False
        return None

    def describe(self) -> str:
        return f"median {self.median:.2f}, 95% interval {self.low:.2f}-{self.high:.2f}, n={self.samples}"


def median_interval(values: Sequence[float]) -> Estimate:
    """Median and its distribution-free 95 % interval: the k-th smallest and k-th largest value,
    with k the largest rank whose binomial tail stays within the 2.5 % on each side. Below six
    samples no such k exists and the interval is the whole range."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    n = len(ordered)
    alpha = (1 - CONFIDENCE) / 2
    k = 0
    tail = 0.0
    # P(Binomial(n, 1/2) <= r) for r = 0, 1, ...: the interval [x_(k+1), x_(n-k)] covers the median
    # with probability 1 - 2 * P(B <= k).
    for r in range(n):
        tail += math.comb(n, r) / 2**n
        if tail > alpha:
            break
        k = r + 1
    low, high = (ordered[k - 1], ordered[n - k]) if k >= 1 else (ordered[0], ordered[-1])
    return Estimate(statistics.median(ordered), low, high, n)


def repeat_until_decided(
    measure_round: Callable[[], Mapping[str, float]],
    limits: Mapping[str, float],
    *,
    minimum: int,
    maximum: int,
    batch: int = 5,
) -> tuple[dict[str, Estimate], dict[str, list[float]]]:
    """Call `measure_round` (one value per name, e.g. a ratio per function) `minimum` times, then
    `batch` more at a time until every name's interval clears its limit or `maximum` rounds ran.
    Returns each name's estimate and its raw samples."""
    samples: dict[str, list[float]] = {name: [] for name in limits}
    rounds = 0
    while True:
        for name, value in measure_round().items():
            samples.setdefault(name, []).append(value)
        rounds += 1
        # Judged after `minimum` rounds, then after every `batch` more, and at the cap.
        if rounds < minimum or ((rounds - minimum) % batch and rounds < maximum):
            continue
        estimates = {name: median_interval(values) for name, values in samples.items()}
        undecided = [name for name, limit in limits.items() if estimates[name].decide(limit) is None]
        if not undecided or rounds >= maximum:
            return estimates, samples
