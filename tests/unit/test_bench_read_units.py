"""bench/read_units.py: item sizes and read units as DynamoDB counts them."""

from __future__ import annotations

from typing import Any

import pytest

from clockless_tools.bench.read_units import attribute_size, item_size, read_units


def test_an_item_is_its_attribute_names_plus_their_values() -> None:
    # Given a string, a number and a boolean
    item: dict[str, dict[str, Any]] = {"name": {"S": "héllo"}, "count": {"N": "12345"}, "ok": {"BOOL": True}}

    # Then: "name" 4 + 6 UTF-8 bytes; "count" 5 + 3 digit pairs + 1; "ok" 2 + 1
    assert item_size(item) == 10 + 9 + 3


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"N": "0.00100"}, 2),  # leading and trailing zeros trimmed: one significant digit
        ({"N": "-1234.5"}, 4),
        ({"B": "AAECAw=="}, 4),  # base64 on the wire, raw bytes counted
        ({"NULL": True}, 1),
        ({"SS": ["ab", "cde"]}, 5),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + (2 + 1) + (2 + 1)),
        ({"M": {"k": {"S": "v"}}}, 3 + 1 + 1 + 1),
    ],
)
def test_attribute_sizes_follow_dynamodbs_rules(value: dict[str, object], size: int) -> None:
    assert attribute_size(value) == size


def test_an_unknown_attribute_type_is_named() -> None:
    with pytest.raises(ValueError, match="'X'"):
        attribute_size({"X": "?"})


def test_a_query_rounds_the_sum_of_its_items_up_to_4_kb_once_and_halves_eventual_reads() -> None:
    # Given two items of 3,000 bytes each (6,000 bytes: two 4 KB units)
    item = {"p": {"S": "x" * 2999}}
    response = {"Items": [item, item]}

    assert read_units("Query", {}, response) == 1.0
    assert read_units("Query", {"ConsistentRead": True}, response) == 2.0


def test_a_read_that_finds_nothing_still_costs_the_minimum() -> None:
    assert read_units("Query", {}, {"Items": []}) == 0.5
    assert read_units("GetItem", {"ConsistentRead": True}, {}) == 1.0


def test_writes_consume_no_read_units() -> None:
    assert read_units("TransactWriteItems", {}, {}) == 0.0
    assert read_units("PutItem", {}, {"Attributes": {"p": {"S": "old"}}}) == 0.0
