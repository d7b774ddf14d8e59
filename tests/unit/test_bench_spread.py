"""The bench's timing rows: a median with its 95 % interval, decided only when clear of the target."""

from __future__ import annotations


def test_the_median_interval_is_the_binomial_order_statistics() -> None:
    from clockless_tools.bench.spread import median_interval

    # n=10: P(B<=1) = 11/1024 <= 2.5 % < P(B<=2), so the interval is the 2nd smallest to 2nd largest.
    estimate = median_interval([float(v) for v in (9, 1, 2, 3, 4, 5, 6, 7, 8, 100)])

    assert (estimate.median, estimate.low, estimate.high, estimate.samples) == (5.5, 2.0, 9.0, 10)
    assert median_interval([1.0, 2.0, 3.0]).low == 1.0  # too few samples: the whole range
    assert median_interval([1.0, 2.0, 3.0]).high == 3.0


def test_a_verdict_is_given_only_when_the_interval_clears_the_target() -> None:
    from clockless_tools.bench.spread import Estimate

    assert Estimate(1.3, 1.2, 1.45, 10).decide(1.5) is True
    assert Estimate(1.7, 1.6, 1.8, 10).decide(1.5) is False
    assert Estimate(1.45, 1.3, 1.6, 10).decide(1.5) is None
    # One sample is a point, not an interval: `make bench --quick` decides nothing.
    assert Estimate(1.78, 1.78, 1.78, 1).decide(1.5) is None


def test_rounds_repeat_until_every_interval_is_decided_or_the_cap() -> None:
    from clockless_tools.bench.spread import repeat_until_decided

    clear = iter([1.2, 1.3, 1.25, 1.22, 1.28, 1.3, 1.21, 1.24, 1.26, 1.27] * 10)
    straddling = iter([1.3, 1.7] * 50)
    rounds = 0

    def measure() -> dict[str, float]:
        nonlocal rounds
        rounds += 1
        return {"clear": next(clear), "straddling": next(straddling)}

    estimates, samples = repeat_until_decided(measure, {"clear": 1.5, "straddling": 1.5}, minimum=10, maximum=20)

    assert rounds == 20
    assert len(samples["clear"]) == 20
    assert estimates["clear"].decide(1.5) is True
    assert estimates["straddling"].decide(1.5) is None

    rounds = 0
    clear = iter([1.2] * 100)
    estimates, _ = repeat_until_decided(lambda: {"clear": next(clear)}, {"clear": 1.5}, minimum=10, maximum=40)
    assert estimates["clear"].samples == 10
