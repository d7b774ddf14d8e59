"""Reading what Python code does from its syntax tree, so comments and strings never count."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ImportedName:
    """A name bound by an import, and the fully qualified thing it stands for."""

    local: str
    qualified: str
    line: int


def module_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, for every absolute import anywhere in the module."""
    return {name.local: name.qualified for name in imported_names(tree)}


@functools.lru_cache(maxsize=65536)
def imported_names(tree: ast.AST) -> tuple[ImportedName, ...]:
    """Every name an absolute import binds in `tree`. Remembered per tree (an ast node hashes by
    identity, and the parsed trees are shared by every copy of the project holding the same file:
    `project._parsed`): the rules ask for each function's imports many times over."""
    return tuple(_imported_names(tree))


def _imported_names(tree: ast.AST) -> Iterator[ImportedName]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    yield ImportedName(alias.asname, alias.name, node.lineno)
                else:
                    # `import a.b` binds `a`; the attribute chain `a.b.c` then qualifies itself.
                    top = alias.name.split(".", 1)[0]
                    yield ImportedName(top, top, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield ImportedName(alias.asname or alias.name, f"{node.module}.{alias.name}", node.lineno)


def imported_modules(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Every absolute module an import statement loads (`from a.b import c` loads `a.b`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno


def qualified_name(node: ast.AST, imports: dict[str, str]) -> str | None:
    """`threading.Timer`, `Timer` (from threading import Timer) -> "threading.Timer"; None if unknown."""
    if isinstance(node, ast.Name):
        return imports.get(node.id)
    if isinstance(node, ast.Attribute):
        base = qualified_name(node.value, imports)
        return None if base is None else f"{base}.{node.attr}"
    return None


# What reads the process environment, as code names it once imports are resolved.
def string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound once to a string literal (`JOB = "x"`, `KEY: Final = "y"`)."""
    constants: dict[str, str] = {}
    rebound: set[str] = set()
    for statement in tree.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign):
            target, value = statement.target, statement.value
        if isinstance(target, ast.Name):
            if target.id in constants:
                rebound.add(target.id)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                constants[target.id] = value.value
    return {name: value for name, value in constants.items() if name not in rebound}


def string_value(node: ast.expr | None, constants: dict[str, str]) -> str | None:
    """A string literal, or a module-level constant naming one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def walk_without_nested_scopes(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a block, not descending into functions or classes defined in it."""
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                stack.append(child)


def assignment(statement: ast.stmt) -> tuple[ast.expr | None, ast.expr | None]:
    """(target, value) of a one-target assignment (`x = ...`, `x: T = ...`); (None, None) for anything else."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        return statement.targets[0], statement.value
    if isinstance(statement, ast.AnnAssign):
        return statement.target, statement.value
    return None, None


def last_binding(tree: ast.Module, name: str) -> ast.stmt | None:
    """The module-level statement that binds `name` last: the one Lambda finds."""
    found: ast.stmt | None = None
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and statement.name == name:
            found = statement
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in statement.names):
                found = statement
        else:
            target, _ = assignment(statement)
            if isinstance(target, ast.Name) and target.id == name:
                found = statement
    return found


def made_by(binding: ast.stmt, method: str) -> list[str]:
    """The names `x` for which `x.<method>` makes `binding` what it is: a decorator `@x.<method>` on a
    def, or an assignment `name = x.<method>(...)`."""
    if isinstance(binding, ast.FunctionDef | ast.AsyncFunctionDef):
        candidates = list(binding.decorator_list)
    else:
        _, value = assignment(binding)
        candidates = [value.func] if isinstance(value, ast.Call) else []
    return [
        candidate.value.id
        for candidate in candidates
        if isinstance(candidate, ast.Attribute) and candidate.attr == method and isinstance(candidate.value, ast.Name)
    ]


def with_scopes(tree: ast.Module) -> Iterator[tuple[ast.AST, list[str]]]:
    """Every node, with the names of the classes and functions it sits in (outermost first)."""
    scopes = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    stack: list[tuple[ast.AST, list[str]]] = [(tree, [])]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        inner = [*scope, node.name] if isinstance(node, scopes) else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
