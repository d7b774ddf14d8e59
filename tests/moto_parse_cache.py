"""moto's DynamoDB parses an UpdateExpression afresh on every request (`UpdateExpressionParser.make`,
a tokenizer and a recursive-descent parser): about 7% of the integration tests' CPU, for the few
dozen distinct expressions the kit and the jobs send. The tests' server keeps each parsed tree by
its string. Sharing one tree is safe because moto only reads it (`find_clauses`) or deep-copies it
before its validators rewrite it (`Validator.__init__`); an invalid expression raises every time
(a raise is not cached). `tests/unit/test_moto_parse_cache.py` fails when moto moves either fact.
Test-only: `make run` and the CLI's servers parse as moto does."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]


@contextmanager
def update_expressions_parsed_once(maxsize: int = 1024) -> Iterator[Any]:
    """While open, `UpdateExpressionParser.make` answers a string it has parsed with the same tree."""
    original = UpdateExpressionParser.__dict__["make"]
    cached = functools.lru_cache(maxsize=maxsize)(original.__get__(None, UpdateExpressionParser))
    UpdateExpressionParser.make = staticmethod(cached)
    try:
        yield cached
    finally:
        UpdateExpressionParser.make = original
