"""What a module-level name is bound to, read from the syntax and followed through imports: the
numbers a rule must match (a shard count, a bucket count) when code declares them as
`NAME: Final = <n>`, never by importing the code."""

from __future__ import annotations

import ast
from typing import Final

from clockless_tools.architecture.code import assignment
from clockless_tools.architecture.project import Project, SourceFile
from clockless_tools.architecture.worker_by_kit import absolute_module

MAX_HOPS: Final = 5


def integer_of(project: Project, source: SourceFile, node: ast.expr, depth: int = 0) -> int | None:
    """The int literal `node` is, or names (through module constants and imports), if the syntax says."""
    if depth > MAX_HOPS:
        return None
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        found = bound_value(project, source, node.id, depth)
        return None if found is None else integer_of(project, found[0], found[1], depth + 1)
    return None


def bound_value(project: Project, source: SourceFile, name: str, depth: int = 0) -> tuple[SourceFile, ast.expr] | None:
    """The value `name` is bound to at module level in `source`, or in the module it is imported from."""
    values = []
    for statement in source.tree.body:
        target, value = assignment(statement)
        if isinstance(target, ast.Name) and target.id == name and value is not None:
            values.append(value)
    if len(values) == 1:
        return source, values[0]
    if values:
        return None  # rebound: which value holds is not for the syntax to say
    for statement in source.tree.body:
        if not isinstance(statement, ast.ImportFrom):
            continue
        for alias in statement.names:
            if (alias.asname or alias.name) == name and depth < MAX_HOPS:
                module = absolute_module(source.module, statement)
                other = project.module_file(module) if module else None
                if other is not None:
                    return bound_value(project, other, alias.name, depth + 1)
    return None
