"""bench/results.py: a figure beside its baseline."""

from __future__ import annotations

from clockless_tools.bench.results import Figure


def test_a_figure_is_its_value_over_its_baseline() -> None:
    figure = Figure("k", "label", "requests", 1, 4, "redelivered without the kit", target="= 1", met=True)

    assert figure.ratio == 0.25
    assert figure.as_dict()["ratio"] == 0.25
    assert Figure("k", "label", "ms", 3.0, None, "none").ratio is None
