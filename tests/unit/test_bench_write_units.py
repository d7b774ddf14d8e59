"""bench/write_units.py: write units as DynamoDB's guide prices them, indexes included."""

from __future__ import annotations

from typing import Any

from clockless_tools.bench.write_units import IndexShape, index_write_units, projected_entry, write_units_of

DUE = IndexShape("due", ("due_shard", "current_window_end"), frozenset({"window_length_days"}))
TABLE_KEYS = ("tenant_id", "program_id")


def _program(end: str, *, shard: str | None = "0", padding: int = 0) -> dict[str, Any]:
    item: dict[str, Any] = {
        "tenant_id": {"S": "t"},
        "program_id": {"S": "p"},
        "current_window_end": {"S": end},
        "window_length_days": {"N": "7"},
        "notes": {"S": "x" * padding},
    }
    if shard is not None:
        item["due_shard"] = {"S": shard}
    return item


def test_a_write_costs_the_larger_image_per_started_kilobyte_and_at_least_one_unit() -> None:
    small, large = _program("2026-01-01"), _program("2026-01-01", padding=1500)

    assert write_units_of(None, small) == 1
    assert write_units_of(small, large) == 2  # ~1.6 KB after: two units
    assert write_units_of(large, None) == 2  # a delete pays for what it removes
    assert write_units_of(None, None) == 1


def test_an_index_entry_whose_key_moves_costs_a_delete_and_a_put() -> None:
    before, after = _program("2026-01-01"), _program("2026-01-08")

    assert index_write_units(before, after, DUE, TABLE_KEYS) == 2


def test_an_unprojected_change_costs_the_index_nothing_and_a_projected_one_a_write() -> None:
    before = _program("2026-01-01")
    padded = _program("2026-01-01", padding=10)  # `notes` is not projected
    longer = {**before, "window_length_days": {"N": "14"}}

    assert index_write_units(before, padded, DUE, TABLE_KEYS) == 0
    assert index_write_units(before, longer, DUE, TABLE_KEYS) == 1


def test_a_sparse_index_pays_only_when_an_item_enters_or_leaves_it() -> None:
    ended = _program("2026-01-01", shard=None)

    assert projected_entry(ended, DUE, TABLE_KEYS) is None
    assert index_write_units(ended, ended, DUE, TABLE_KEYS) == 0
    assert index_write_units(_program("2026-01-01"), ended, DUE, TABLE_KEYS) == 1
    assert index_write_units(None, _program("2026-01-01"), DUE, TABLE_KEYS) == 1
