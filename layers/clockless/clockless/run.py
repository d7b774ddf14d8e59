"""`JobRun`: what a job's logic is handed for one tick, and the shape of that logic (`JobFunction`).

The job's side of a delivery: the tick, its last success (read on first access), the attempt's
budget, and `each`, which applies rows one by one so a bad row fails alone. `clockless.job` builds
one per delivery that runs; a buffered tick's start (`clockless.fanout.buffer`) builds one too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from aws_lambda_powertools import Logger

from clockless.items import FailedItem, ItemOutcomes, apply_each, log_failure
from clockless.throttle import Budget
from clockless.tick import Tick


class JobRun:
    """What a job's logic is handed for one tick."""

    __slots__ = ("_last_success", "_load_last_success", "_logger", "budget", "failures", "items_found", "tick")

    def __init__(
        self,
        tick: Tick,
        *,
        last_success: datetime | None = None,
        load_last_success: Callable[[], datetime | None] | None = None,
        budget: Budget | None = None,
        logger: Logger | None = None,
    ) -> None:
        self.tick = tick
        self._last_success = last_success
        self._load_last_success = load_last_success
        # The attempt's time, for waiting out throttles (a fan-out coordinator's sends); None: as
        # long as a Lambda attempt can last.
        self.budget = budget
        self._logger = logger
        # What `each` found and what failed in it, over every call (the kit settles the tick by them).
        self.items_found = 0
        self.failures: list[FailedItem] = []

    def each[RowT, ItemT](
        self,
        rows: Iterable[RowT],
        *,
        row_key: Callable[[RowT], str],
        item_of: Callable[[RowT], ItemT],
        apply: Callable[[ItemT], bool],
        table: str | None = None,
    ) -> ItemOutcomes:
        """Apply each row on its own (`apply`: True applied, False already done): a row that does
        not decode (`item_of` raises) or apply fails alone, logged at ERROR naming the row, and the
        tick settles by the job's `tolerated_failures` (clockless.items)."""

        def report(failure: FailedItem) -> None:
            if self._logger is not None:
                log_failure(self._logger, failure, "item failed; the rest of the tick goes on", table=table)

        outcomes = apply_each(rows, row_key=row_key, item_of=item_of, apply=apply, on_failed=report)
        self.items_found += outcomes.found
        self.failures.extend(outcomes.failures)
        return outcomes

    @property
    def last_success(self) -> datetime | None:
        """The scheduled time of the job's last succeeded tick before this one, so a job that works
        on a time range can heal after a miss. Read from the ledger on first access: a job that
        never asks pays no request for it."""
        if self._load_last_success is not None:
            self._last_success = self._load_last_success()
            self._load_last_success = None
        return self._last_success

    @property
    def last_success_known(self) -> bool:
        return self._load_last_success is None


JobFunction = Callable[[JobRun], Mapping[str, Any]]
