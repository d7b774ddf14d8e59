"""A job's index at fewer keys per partition than it writes in production, for its tests."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


def keys_per_partition_fixture(repository: ModuleType, keys: str, partitions: int) -> Any:
    """An autouse fixture `keys_per_partition`: the repository's index at one key per partition
    (`param`, by indirect parametrization: more). A partition run makes a Query per key, so the
    job's own count (`repository.<keys>` // `partitions`) would multiply the Queries of every test
    that reads all partitions for nothing it looks at; the tests that count requests or pages ask
    for more."""

    @pytest.fixture(autouse=True)
    def keys_per_partition(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
        per: int = getattr(request, "param", 1)
        monkeypatch.setattr(repository, keys, per * partitions)
        return per

    return keys_per_partition
