"""Which requests of a run a fault-model sweep aims at: every one (the exhaustive sweep, `slow`,
which CI runs), or one per code path (what `make test` runs).

Requests that share a code path come in repeating cycles (a partition's pages: read, transaction,
cursor; a coordinator's batches of partition messages): the same operation on the same tables,
after the same operation on the same tables. `one_per_path` keeps the first request of each such
pair (and the first and the last request), so every distinct step is faulted once, and the repeats
of a step already faulted are left to the exhaustive sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pytest

from clockless_tools.simulate.faults import MODEL_KINDS, FaultKind, RequestRecord

EVERY_REQUEST: Final = "every request"
ONE_PER_PATH: Final = "one per path"
# The exhaustive variant is slow: `make test` runs one per path, CI both (`make test-slow`).
SWEEPS: Final = (ONE_PER_PATH, pytest.param(EVERY_REQUEST, marks=pytest.mark.slow))


def kinds(*in_make_test: FaultKind) -> list[object]:
    """Every kind of the fault model; those not named are left to CI (`slow`). A sweep whose runs
    each cost a fanned-out tick keeps in `make test` the kinds whose path no cheaper sweep of the
    same requests takes (docs/development.md lists which sweep runs which kinds where)."""
    return [kind if kind in in_make_test else pytest.param(kind, marks=pytest.mark.slow) for kind in MODEL_KINDS]


def one_per_path(requests: Sequence[RequestRecord]) -> list[int]:
    """1-based indexes: the first request, the last, and the first of each (previous, this) step."""
    seen: set[tuple[tuple[str, frozenset[str]], tuple[str, frozenset[str]]]] = set()
    kept = []
    previous = ("", frozenset[str]())
    for index, request in enumerate(requests, start=1):
        step = (request.operation, request.tables)
        if (previous, step) not in seen or index in (1, len(requests)):
            seen.add((previous, step))
            kept.append(index)
        previous = step
    return kept


def aimed_at(requests: Sequence[RequestRecord], sweep: str) -> list[int]:
    return list(range(1, len(requests) + 1)) if sweep == EVERY_REQUEST else one_per_path(requests)
