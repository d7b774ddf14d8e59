"""simulate/snapshot.py: tables compared item by item, and their effects counted."""

from __future__ import annotations

from clockless_tools.simulate.snapshot import compare_table, effects_between


def _item(key: str, **attributes: str) -> dict[str, dict[str, str]]:
    return {"id": {"S": key}, **{name: {"N": value} for name, value in attributes.items()}}


def test_comparison_names_extra_missing_and_changed_items() -> None:
    simulation = [_item("a", count="1"), _item("b", count="2"), _item("c")]
    reference = [_item("a", count="1"), _item("b", count="1"), _item("d")]

    differences = compare_table("Counters", simulation, reference, ["id"])

    assert [(d.key, d.kind, d.attributes) for d in differences] == [
        ({"id": "b"}, "changed", {"count": ("2", "1")}),
        ({"id": "c"}, "extra", {}),
        ({"id": "d"}, "missing", {}),
    ]
    assert differences[0].describe() == "Counters [id=b]: count: '2' vs '1' (simulation vs reference)"


def test_against_the_table_before_the_run_an_effect_left_undone_is_lost_and_one_beyond_it_is_not() -> None:
    # GIVEN a table before the run, the reference's effects on it (one delete, one create, one update)
    before = [_item("deleted"), _item("updated", n="1"), _item("kept"), _item("kept-2")]
    reference = [_item("updated", n="2"), _item("created"), _item("kept"), _item("kept-2")]
    # WHEN the simulation took none of them and did two things the reference did not
    simulation = [_item("deleted"), _item("updated", n="1"), _item("kept", n="9"), _item("extra")]

    differences = compare_table("T", simulation, reference, ["id"], before=before)

    # THEN what it left as it was is lost, what it did besides is beyond once (the sentence's "twice")
    assert [(d.key["id"], d.kind, d.lost) for d in differences] == [
        ("created", "missing", True),
        ("deleted", "extra", True),
        ("extra", "extra", False),
        ("kept", "changed", False),
        ("kept-2", "missing", False),
        ("updated", "changed", True),
    ]


def test_sets_in_another_order_are_the_same_item() -> None:
    first = [{"id": {"S": "a"}, "tags": {"SS": ["x", "y"]}}]
    second = [{"id": {"S": "a"}, "tags": {"SS": ["y", "x"]}}]

    assert compare_table("T", first, second, ["id"]) == []


def test_effects_count_created_updated_and_deleted_items() -> None:
    before = [_item("kept"), _item("changed", n="1"), _item("deleted")]
    after = [_item("kept"), _item("changed", n="2"), _item("created")]

    effects = effects_between(before, after, ["id"])

    assert (effects.created, effects.updated, effects.deleted, effects.total) == (1, 1, 1, 3)
