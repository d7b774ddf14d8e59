"""What a job implements to fan out (`PartitionWork`), and a page of a partition (`Page`).

How to read a partition page by page, how one row becomes an item, and which conditional writes
apply one item."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

ItemT = TypeVar("ItemT")


@dataclass(frozen=True, slots=True)
class Page[T]:
    """One page of a partition: its rows, and where the next page starts (None: the last page)."""

    items: list[T]
    cursor: dict[str, Any] | None = field(default=None)


class PartitionWork(Protocol[ItemT]):
    """A job's work, split into partitions (the shards of its sparse index).

    `read` returns rows as the table holds them, undecoded; the kit turns each row into an item
    (`item_of`) and each item into its writes (`writes`) one at a time, so a row that cannot be
    decoded or applied fails alone (clockless.items): the rest of its page and partition go on,
    and the row is listed failed under `row_key(row)`, which must read only the row's key
    attributes and equal `item_key(item_of(row))`. `table` names the table the rows come from
    (the ERROR line of a failed row names it).

    `writes` returns low-level `TransactItems` entries (`{"Put": {...}}`, `{"Update": ...}`,
    `{"Delete": ...}`), each with the condition that makes it idempotent on its own: an item
    already done must fail a condition (`ConditionalCheckFailed`), never apply twice. All of an
    item's actions are applied atomically together, and an applied item must leave what `read`
    returns (it leaves the sparse index), so a resumed partition does not find it again.
    """

    @property
    def table(self) -> str: ...

    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> Page[Any]: ...

    def row_key(self, row: Any) -> str: ...

    def item_of(self, row: Any) -> ItemT: ...

    def writes(self, item: ItemT, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]: ...

    def item_key(self, item: ItemT) -> str: ...

    def encode(self, item: ItemT) -> dict[str, Any]: ...

    def decode(self, data: Mapping[str, Any]) -> ItemT: ...


@runtime_checkable
class ReadsOutside(Protocol):
    """A `PartitionWork` whose index may hold rows `read` can never return: their key sorts outside
    every key the job writes (`not-a-date` in a date key sorts after every date), so no due range
    reaches them.

    `read_outside` returns a partition's such rows, undecoded (usually none: one Query per side
    of the key range its due read leaves open). The kit reads them once per partition per tick,
    after its last page, and fails each by name as it fails a row that does not decode: the work
    DLQ, an ERROR line, the tick's failed count and its ledger entry."""

    def read_outside(self, partition: str, params: Mapping[str, Any]) -> Iterable[Any]: ...
