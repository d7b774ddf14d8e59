"""What a job implements to fan out: how to read a partition page by page, and which
conditional writes apply one item."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

ItemT = TypeVar("ItemT")


@dataclass(frozen=True, slots=True)
class Page[T]:
    """One page of a partition: its items, and where the next page starts (None: the last page)."""

    items: list[T]
    cursor: dict[str, Any] | None = field(default=None)


class PartitionWork(Protocol[ItemT]):
    """A job's work, split into partitions (the shards of its sparse index).

    `writes` returns low-level `TransactItems` entries (`{"Put": {...}}`, `{"Update": ...}`,
    `{"Delete": ...}`), each with the condition that makes it idempotent on its own: an item
    already done must fail a condition (`ConditionalCheckFailed`), never apply twice. All of an
    item's actions are applied atomically together, and an applied item must leave what `read`
    returns (it leaves the sparse index), so a resumed partition does not find it again.
    """

    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> Page[ItemT]: ...

    def writes(self, item: ItemT, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]: ...

    def item_key(self, item: ItemT) -> str: ...

    def encode(self, item: ItemT) -> dict[str, Any]: ...

    def decode(self, data: Mapping[str, Any]) -> ItemT: ...
