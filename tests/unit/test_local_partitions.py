"""clockless_tools.local.partitions: how many physical partitions a table or index has, where a key
value lands, and how partitions grow and split."""

from __future__ import annotations

import pytest

from clockless_tools.local.partitions import (
    PARTITION_BYTES,
    HashRanges,
    key_place,
    partitions_for,
    string_key_place,
)


@pytest.mark.parametrize(
    ("write", "read", "size", "expected"),
    [
        (4_000, 12_000, 0, 4),  # a new on-demand table: 4 by writes, 4 by reads
        (16_000, 12_000, 0, 16),  # warmed to 16,000 writes
        (4_000, 24_000, 0, 8),  # reads need more
        (4_000, 12_000, 25 * 1024**3, 4),  # 25 GB fits in 3: the throughput's 4 hold it
        (1_000, 3_000, 5 * PARTITION_BYTES / 2, 3),  # 25 GB on a small table: its size needs 3
        (1, 1, 0, 1),
        (4_000.0000001, 1, 0, 4),  # a rounding hair is not a partition
    ],
)
def test_a_resource_has_the_least_partitions_its_throughput_and_size_need(
    write: float, read: float, size: float, expected: int
) -> None:
    assert partitions_for(write, read, size) == expected


def test_a_key_place_is_stable_and_spread_over_the_hash_space() -> None:
    places = [string_key_place(f"tenant-{n:04d}") for n in range(2_000)]
    assert string_key_place("tenant-0000") == places[0] == key_place('{"S": "tenant-0000"}')
    assert all(0 <= place < 1 for place in places)
    ranges = HashRanges(16)
    counts = [0] * 16
    for place in places:
        counts[ranges.index(place)] += 1
    assert min(counts) > 2_000 / 16 * 0.7  # no partition starved: a hash, not an order


def test_growing_halves_every_partition_so_no_key_moves_off_its_range() -> None:
    ranges = HashRanges(4)
    places = [string_key_place(str(n)) for n in range(100)]
    before = [ranges.index(place) for place in places]

    assert ranges.grow_to(6)
    assert len(ranges) == 8
    assert [ranges.index(place) // 2 for place in places] == before
    assert not ranges.grow_to(8)


def test_split_for_heat_parts_the_keys_of_one_partition_and_never_splits_one_key() -> None:
    ranges = HashRanges(4)
    hot = [p for p in (string_key_place(str(n)) for n in range(1_000)) if ranges.index(p) == 1][:3]

    assert ranges.split(1, hot)
    assert len(ranges) == 5
    assert len({ranges.index(place) for place in hot}) == 2
    alone = [p for p in hot if sum(ranges.index(q) == ranges.index(p) for q in hot) == 1]
    assert not ranges.split(ranges.index(alone[0]), hot)


def test_a_resource_without_partitions_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one partition"):
        HashRanges(0)
