"""A job's index at fewer keys per partition than it writes in production, for its tests."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest

from clockless_tools.simulate.index_keys import JOBS


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


@contextmanager
def example_jobs_at_one_key_per_partition() -> Iterator[dict[tuple[str, str], int]]:
    """The indexes of the jobs that write more keys than they run partitions (the simulator's list,
    `clockless_tools.simulate.index_keys.JOBS`) at one key per partition for the duration, yielding
    their own counts. A key written at one per partition (0..partitions-1) is the first key its partition reads
    at any count, so a CLI run in a process of its own, at the jobs' own counts, still finds what this
    process seeded."""
    own: dict[tuple[str, str], int] = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, keys, partitions in JOBS:
            module = importlib.import_module(name)
            own[(name, keys)] = getattr(module, keys)
            patch.setattr(module, keys, getattr(module, partitions))
        yield own


def at_own_counts(own: dict[tuple[str, str], int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The example jobs' indexes back at their own counts, for one test."""
    for (name, keys), count in own.items():
        monkeypatch.setattr(importlib.import_module(name), keys, count)
