"""Canaries for clockless_tools/local/moto_expressions.py, read from the pinned moto: the facts that
make sharing a parsed UpdateExpression safe, that every traverser maps node types written as class
literals (the same for every instance), and both patches' own behaviour."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest
from moto.dynamodb import responses
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.parsing import validators
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

from clockless_tools.local.moto_expressions import node_types_read_once, update_expressions_parsed_once


def test_moto_parses_update_expressions_through_the_patched_class_attribute() -> None:
    # Every call site looks `make` up on the class at call time (a `from ... import make` would miss it).
    assert "UpdateExpressionParser.make(" in inspect.getsource(responses)
    assert "UpdateExpressionParser.make(" in inspect.getsource(DynamoDBBackend.update_item)


def test_moto_validates_a_deep_copy_of_the_tree_it_is_given() -> None:
    # The validators rewrite the tree they walk: a shared cached tree must never be the one walked.
    assert "self.node_to_validate = deepcopy(expression)" in inspect.getsource(validators.Validator.__init__)


def test_a_parsed_expression_is_answered_from_the_cache_and_an_invalid_one_raises_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # moto's own parser, even where this worker's integration server already cached it.
    installed = UpdateExpressionParser.__dict__["make"]
    own = getattr(installed.__func__, "__wrapped__", None)
    if own is not None:
        monkeypatch.setattr(UpdateExpressionParser, "make", staticmethod(own))
    original = UpdateExpressionParser.__dict__["make"]
    with update_expressions_parsed_once() as cached:
        first = UpdateExpressionParser.make("SET a = :a")
        assert UpdateExpressionParser.make("SET a = :a") is first
        for _ in range(2):
            with pytest.raises(Exception, match="Invalid UpdateExpression"):
                UpdateExpressionParser.make("SET = :a")
        assert cached.cache_info().hits == 1
    assert UpdateExpressionParser.__dict__["make"] is original
    assert UpdateExpressionParser.make("SET a = :a") is not first


def traversers() -> list[type]:
    """moto's traversers (the planted one below left out)."""
    found: list[type] = []
    pending = [kind for kind in DepthFirstTraverser.__subclasses__() if kind.__module__.startswith("moto.")]
    while pending:
        kind = pending.pop()
        found.append(kind)
        pending.extend(kind.__subclasses__())
    return found


def test_moto_ships_the_traversers_the_patch_was_checked_against() -> None:
    names = {kind.__name__ for kind in traversers()}
    assert {"ExpressionAttributeValueProcessor", "ExecuteOperations", "ActionCountValidator"} <= names
    assert len(names) >= 10


def loose_maps(kinds: list[type]) -> list[str]:
    """The traversers whose `_processing_map` is anything but `return {SomeNode: self.method, ...}`."""
    loose = []
    for kind in kinds:
        if "_processing_map" not in kind.__dict__:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(kind.__dict__["_processing_map"])))
        body = tree.body[0].body  # type: ignore[attr-defined]
        returned = body[-1]
        ok = (
            len(body) == 1 + isinstance(body[0], ast.Expr)  # a docstring at most before the return
            and isinstance(returned, ast.Return)
            and isinstance(returned.value, ast.Dict)
            and all(isinstance(key, ast.Name | ast.Attribute) for key in returned.value.keys)
        )
        if not ok:
            loose.append(kind.__name__)
    return loose


def test_every_traverser_maps_class_literals_only() -> None:
    assert loose_maps(traversers()) == []


class PlantedComputedMap(DepthFirstTraverser):  # type: ignore[misc]
    def __init__(self, kinds: tuple[type, ...]) -> None:
        self.kinds = kinds

    def _processing_map(self) -> dict[type, object]:
        return dict.fromkeys(self.kinds, self.kinds)


def test_a_map_computed_from_the_instance_is_caught() -> None:
    assert loose_maps([PlantedComputedMap]) == ["PlantedComputedMap"]


def test_moto_asks_for_node_types_at_every_node_through_the_patched_method() -> None:
    source = inspect.getsource(DepthFirstTraverser.traverse_node_recursively)
    assert "self.nodes_to_be_processed()" in source
    assert "processors" in inspect.getsource(validators.Validator.validate)


def test_the_patch_answers_what_moto_answers_and_restores_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = DepthFirstTraverser.__dict__["nodes_to_be_processed"]
    monkeypatch.setattr(DepthFirstTraverser, "nodes_to_be_processed", getattr(installed, "stock", installed))
    original = DepthFirstTraverser.__dict__["nodes_to_be_processed"]
    processor = validators.ActionCountValidator()
    expected = processor.nodes_to_be_processed()
    with node_types_read_once() as known:
        assert processor.nodes_to_be_processed() == expected
        assert validators.ActionCountValidator().nodes_to_be_processed() is known[validators.ActionCountValidator]
    assert DepthFirstTraverser.__dict__["nodes_to_be_processed"] is original
