"""Canaries for tests/moto_parse_cache.py: the facts that make sharing a parsed UpdateExpression
safe, read from the pinned moto, and the cache's own behaviour."""

from __future__ import annotations

import inspect

import pytest
from moto.dynamodb import responses
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.parsing import validators
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

from tests.moto_parse_cache import update_expressions_parsed_once


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
