"""docs/schedules.md carries the support table generated from clockless_tools.template.scheduler_support."""

from __future__ import annotations

from clockless_tools.template.scheduler_support import FEATURES, NOT_APPLICABLE, REFUSED, SUPPORTED


def test_every_feature_says_supported_refused_or_not_applicable() -> None:
    assert {feature.status for feature in FEATURES} == {SUPPORTED, REFUSED, NOT_APPLICABLE}
    assert all("|" not in feature.name + feature.how for feature in FEATURES)
