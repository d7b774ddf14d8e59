"""moto's UpdateExpressions without the work DynamoDB does not do: parsing the same string again and
asking a validator's node types at every node.

- **Parsed once.** moto parses an UpdateExpression afresh on every request
  (`UpdateExpressionParser.make`, a tokenizer and a recursive-descent parser), for the few dozen
  distinct expressions the kit and the jobs send. `update_expressions_parsed_once` keeps each parsed
  tree by its string. Sharing one tree is safe because moto only reads it (`find_clauses`) or
  deep-copies it before its validators rewrite it (`Validator.__init__`); an invalid expression
  raises every time (a raise is not cached).
- **Node types read once.** moto validates every UpdateExpression by walking its tree ten times (one
  `DepthFirstTraverser` per check), and at every node of every walk asks the traverser which node
  types it processes: `nodes_to_be_processed()` builds the traverser's `_processing_map()` (a dict of
  bound methods) to take only its keys. Those keys are class literals in every traverser moto ships,
  the same for every instance, so `node_types_read_once` answers them once per traverser class.

What moto answers and stores is unchanged; tests/unit/test_moto_expressions.py fails when moto moves
a fact either rests on. `expressions_evaluated_cheaply` installs both: the tests' servers and the
simulator's (`make run`) use it; `make bench` measures stock moto here.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def update_expressions_parsed_once(maxsize: int = 1024) -> Iterator[Any]:
    """While open, `UpdateExpressionParser.make` answers a string it has parsed with the same tree."""
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    original = UpdateExpressionParser.__dict__["make"]
    cached = functools.lru_cache(maxsize=maxsize)(original.__get__(None, UpdateExpressionParser))
    UpdateExpressionParser.make = staticmethod(cached)
    try:
        yield cached
    finally:
        UpdateExpressionParser.make = original


@contextmanager
def node_types_read_once() -> Iterator[dict[type, tuple[type, ...]]]:
    """While open, each traverser class's node types are read from its map once."""
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]

    original = DepthFirstTraverser.__dict__["nodes_to_be_processed"]
    known: dict[type, tuple[type, ...]] = {}

    def nodes_to_be_processed(self: Any) -> tuple[type, ...]:
        kinds = known.get(type(self))
        if kinds is None:
            kinds = known[type(self)] = tuple(self._processing_map())
        return kinds

    nodes_to_be_processed.stock = getattr(original, "stock", original)  # type: ignore[attr-defined]
    DepthFirstTraverser.nodes_to_be_processed = nodes_to_be_processed
    try:
        yield known
    finally:
        DepthFirstTraverser.nodes_to_be_processed = original


@contextmanager
def expressions_evaluated_cheaply() -> Iterator[None]:
    """Both, for the duration."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(update_expressions_parsed_once())
        stack.enter_context(node_types_read_once())
        yield
