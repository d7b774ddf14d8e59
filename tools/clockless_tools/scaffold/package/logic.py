"""The job's `logic.py`: its domain as plain Python (`Item`, the `ItemStore` it asks for, `apply_due`),
the same with or without fan-out."""

from __future__ import annotations

from typing import Final

LOGIC: Final = '''"""__JOB__: apply every item due by the tick's scheduled time, once.

Plain Python: no boto3, no environment, no clock. The store is passed in. This is the skeleton
`clockless new job` wrote: rename `Item` and write what applying one means (docs/adding-a-job.md).
Rows are decoded and applied one at a time by `each` (the kit's `JobRun.each`): a row that does
not decode or apply fails alone, and the tick settles by the job's `tolerated_failures`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from clockless.items import ItemOutcomes, apply_each


@dataclass(frozen=True, slots=True)
class Item:
    tenant_id: str
    item_id: str
    due_at: datetime


class ItemStore(Protocol):
    def due_rows(self, *, as_of: datetime) -> Iterable[Any]:
        """Rows (as stored, undecoded) of the items not yet applied whose due_at is at or before `as_of`."""
        ...

    def row_key(self, row: Any) -> str:
        """The row's key, read from its key attributes only."""
        ...

    def item_of(self, row: Any) -> Item:
        """The row decoded; raises (naming the field) for a row that is not an item."""
        ...

    def apply(self, item: Item) -> bool:
        """Apply the item if it is still due; False if it was already applied (a duplicate). What it
        writes depends on the item alone: a late delivery can leave an item to the next tick."""
        ...


@dataclass(frozen=True, slots=True)
class TickResult:
    as_of: datetime
    due: int
    applied: int
    already_done: int
    failed: int

    def as_summary(self) -> dict[str, int | str]:
        return {
            "as_of": self.as_of.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "due": self.due,
            "applied": self.applied,
            "already_done": self.already_done,
            "failed": self.failed,
        }


def apply_due(store: ItemStore, *, as_of: datetime, each: Callable[..., ItemOutcomes] = apply_each) -> TickResult:
    """Apply every item due by `as_of` (the tick's scheduled time, never the wall clock), each on its own.
    Everything due, not only since the previous tick: an item written late with a past due time is
    still applied, by the first tick that finds it."""
    outcomes = each(store.due_rows(as_of=as_of), row_key=store.row_key, item_of=store.item_of, apply=store.apply)
    return TickResult(
        as_of=as_of,
        due=outcomes.found,
        applied=outcomes.applied,
        already_done=outcomes.already_done,
        failed=outcomes.failed,
    )
'''
