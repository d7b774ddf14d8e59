"""bench/results.py: a figure beside its baseline."""

from __future__ import annotations

import json
import re

import pytest

from clockless_tools.bench.cold_start import MIB
from clockless_tools.bench.results import Figure
from clockless_tools.template.loader import PROJECT_ROOT


def test_a_figure_is_its_value_over_its_baseline() -> None:
    figure = Figure("k", "label", "requests", 1, 4, "redelivered without the kit", target="= 1", met=True)

    assert figure.ratio == 0.25
    assert figure.as_dict()["ratio"] == 0.25
    assert Figure("k", "label", "ms", 3.0, None, "none").ratio is None


def test_every_size_in_the_committed_results_is_in_mib_and_matches_the_bytes_in_its_label() -> None:
    # Sizes are computed in 2**20-byte units, so they are labelled MiB, each with its exact bytes.
    document = json.loads((PROJECT_ROOT / "bench" / "results.json").read_text(encoding="utf-8"))
    sizes = {key: figure for key, figure in document["figures"].items() if key.startswith("artifacts.")}

    assert sizes, "the committed results have no artifact sizes"
    for key, figure in sizes.items():
        assert figure["unit"] == "MiB", key
        written = re.search(r"\(([\d,]+) bytes\)", figure["label"])
        if written:
            assert figure["value"] == pytest.approx(int(written[1].replace(",", "")) / MIB, abs=0.001), key
    assert not [f for f in document["figures"].values() if f["unit"] in ("MB", "KB", "GB")]
