"""A partition reads several index keys (`clockless.dynamo.partition_keys`, `keys_page`), and the
request formula counts the Queries that read makes (`clockless_tools.bench.requests.key_pages`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from clockless.dynamo import Rows, keys_page, partition_keys
from clockless.errors import ArgumentError, DeclarationError
from clockless_tools.bench.requests import key_pages


def test_a_partition_reads_every_key_its_number_is_the_remainder_of() -> None:
    assert partition_keys(3, 32, 512) == tuple(str(k) for k in range(3, 512, 32))
    assert partition_keys(0, 4, 4) == ("0",)
    every = [key for partition in range(32) for key in partition_keys(partition, 32, 512)]
    assert sorted(every, key=int) == [str(k) for k in range(512)]


def test_keys_written_at_one_per_partition_are_still_read_by_the_partition_of_their_number() -> None:
    # the migration: raising the key count leaves every old key k < partitions with partition k
    for old in range(16):
        assert str(old) in partition_keys(old, 16, 256)


def test_fewer_keys_than_partitions_or_a_partition_out_of_range_is_refused() -> None:
    with pytest.raises(DeclarationError, match="at least one key per partition, got 8 keys for 16"):
        partition_keys(0, 16, 8)
    with pytest.raises(ArgumentError, match=r"partition must be 0..15, got 16"):
        partition_keys(16, 16, 256)


@dataclass
class _Index:
    """An index of rows by key, queried as DynamoDB pages it: a `LastEvaluatedKey` at the limit."""

    rows: Mapping[str, list[int]]
    queries: list[tuple[str, int, Any]] = field(default_factory=list)

    def query(self, key: str, limit: int, start: dict[str, Any] | None) -> Rows:
        self.queries.append((key, limit, start))
        after = -1 if start is None else start["n"]["N"]
        left = [n for n in self.rows.get(key, []) if n > after]
        page = left[:limit]
        last = {"shard": {"S": key}, "n": {"N": page[-1]}} if len(page) == limit else None
        return [{"n": n, "key": key} for n in page], last


def _read_all(index: _Index, keys: tuple[str, ...], limit: int) -> tuple[list[tuple[str, int]], list[int]]:
    rows: list[tuple[str, int]] = []
    pages: list[int] = []
    cursor: dict[str, Any] | None = None
    while True:
        found, cursor = keys_page(index.query, keys, cursor, limit, hash_key="shard")
        rows += [(row["key"], row["n"]) for row in found]
        pages.append(len(found))
        if cursor is None:
            return rows, pages
        cursor = json.loads(json.dumps(cursor))  # as the partition record stores it


@pytest.mark.parametrize(
    "items_by_key", [[0, 0, 0, 0], [5, 0, 0, 2], [3, 3, 3], [0, 7, 0, 1], [1], [6], [2, 0, 4, 0, 0, 9]]
)
@pytest.mark.parametrize("limit", [1, 3, 4, 50])
def test_a_page_goes_on_into_the_next_key_and_the_formula_counts_its_pages_and_queries(
    items_by_key: list[int], limit: int
) -> None:
    keys = tuple(str(k) for k in range(len(items_by_key)))
    index = _Index({key: list(range(n)) for key, n in zip(keys, items_by_key, strict=True)})

    rows, pages = _read_all(index, keys, limit)

    assert rows == [(key, n) for key, count in zip(keys, items_by_key, strict=True) for n in range(count)]
    assert all(page <= limit for page in pages)
    assert (pages, len(index.queries)) == key_pages(items_by_key, limit)


def test_a_cursor_stored_before_the_keys_were_raised_goes_on_in_its_key_then_the_rest() -> None:
    # a partition of one key stored the page's LastEvaluatedKey itself as its cursor
    index = _Index({"3": [0, 1, 2, 3], "35": [0]})
    old = {"shard": {"S": "3"}, "n": {"N": 1}}

    rows, cursor = keys_page(index.query, ("3", "35"), old, 10, hash_key="shard")

    assert [(row["key"], row["n"]) for row in rows] == [("3", 2), ("3", 3), ("35", 0)]
    assert cursor is None


@pytest.mark.parametrize(
    "cursor",
    [{"key": "7", "after": None}, {"key": "3", "after": "x"}, {"shard": {"S": "9"}, "n": {"N": 0}}, {}],
    ids=["another-key", "not-a-key", "old-form-another-key", "empty"],
)
def test_a_cursor_not_of_the_partitions_keys_is_refused(cursor: dict[str, Any]) -> None:
    with pytest.raises(ArgumentError, match=r"cursor is not one of this partition's keys 3..35"):
        keys_page(_Index({}).query, ("3", "35"), cursor, 10, hash_key="shard")
