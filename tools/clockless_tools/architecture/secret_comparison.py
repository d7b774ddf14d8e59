"""Rule `secret-comparison`: no `==` on a secret: an equality returns sooner the earlier two strings
differ, so a caller who
times it can guess a secret one character at a time. Secrets are compared with
`hmac.compare_digest` over equal-length digests.

What counts as a secret value is read from the syntax tree: a name, attribute, dictionary key or
called function whose name says secret, token, password, signature or credential (not its id,
ARN, name, header or length), anything read with decryption (`decrypt=True`, `WithDecryption`), and
every name assigned from one of those in the same scope (`value = get_secret(...)` makes `value`
a secret; so does `current = value["current"]` after it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation, per_file

SECRET_COMPARISON: Final = "secret-comparison"  # noqa: S105 - a rule name

_SENSITIVE_WORDS: Final = frozenset(
    {"secret", "secrets", "token", "tokens", "password", "passwords", "passwd", "signature", "signatures"}
    | {"credential", "credentials"}
)
# A name ending in one of these is about a secret, not the secret: `secret_id`, `SECRET_HEADER`.
_METADATA_WORDS: Final = frozenset(
    {"id", "ids", "arn", "name", "names", "header", "headers", "length", "len", "size", "type", "age", "seconds"}
    | {"version", "versions", "path", "env", "count", "prefix", "kind", "provider", "client", "manager", "source"}
    | {"error", "exception", "policy", "rotation"}
)
# Their result tells the shape of a value, not its content: `len(secret) == 0` leaks nothing.
_SHAPE_FUNCTIONS: Final = frozenset({"len", "type", "isinstance", "hasattr", "callable", "id", "bool"})
_DECRYPTING_KEYWORDS: Final = frozenset({"decrypt", "WithDecryption"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

_FIX: Final = "hash both sides (hashlib.sha256) and compare the digests with hmac.compare_digest"


def check_secret_comparison(project: Project) -> Iterator[Violation]:
    for source in project.sources:
        yield from _check_file(source)


@per_file
def _check_file(source: SourceFile) -> Iterator[Violation]:
    return _check_scope(source, source.tree.body, frozenset())


def sensitive_name(identifier: str) -> bool:
    """`presented_secret`, `apiToken`, `get_secret_value`: yes. `secret_id`, `SECRET_HEADER`: no."""
    words = [word.lower() for word in _WORD.findall(identifier)]
    return bool(words) and bool(_SENSITIVE_WORDS & set(words)) and words[-1] not in _METADATA_WORDS


def _check_scope(source: SourceFile, body: list[ast.stmt], inherited: frozenset[str]) -> Iterator[Violation]:
    nodes, nested = _scope(body)
    tainted = _tainted(nodes, inherited)
    for node in nodes:
        if isinstance(node, ast.Compare):
            yield from _check_compare(source, node, tainted)
    for scope in nested:
        # A nested function sees the names its enclosing scope bound to secrets.
        inner: list[ast.stmt] = [ast.Expr(scope.body)] if isinstance(scope, ast.Lambda) else scope.body
        yield from _check_scope(source, inner, tainted)


_Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda


def _scope(body: list[ast.stmt]) -> tuple[list[ast.AST], list[_Scope]]:
    """The nodes of one scope, and the scopes defined directly in it."""
    nodes: list[ast.AST] = []
    nested: list[_Scope] = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, _Scope):
            nested.append(node)
            continue
        nodes.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return nodes, nested


def _tainted(nodes: list[ast.AST], inherited: frozenset[str]) -> frozenset[str]:
    """Names (and dotted attributes) bound in this scope to a secret value, to a fixed point."""
    bindings: list[tuple[ast.expr, ast.expr]] = []
    for node in nodes:
        if isinstance(node, ast.Assign):
            bindings.extend((target, node.value) for target in node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
            bindings.append((node.target, node.value))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            bindings.append((node.target, node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bindings.append((node.optional_vars, node.context_expr))
    tainted = set(inherited)
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if _mentions_secret(value, tainted):
                for name in _bound_names(target):
                    if name not in tainted:
                        tainted.add(name)
                        changed = True
    return frozenset(tainted)


def _bound_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)
    elif isinstance(target, ast.Name | ast.Attribute):
        yield ast.unparse(target)


def _mentions_secret(node: ast.AST, tainted: set[str] | frozenset[str]) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and (current.id in tainted or sensitive_name(current.id)):
            return True
        if isinstance(current, ast.Attribute) and (ast.unparse(current) in tainted or sensitive_name(current.attr)):
            return True
        if isinstance(current, ast.Subscript) and _sensitive_constant(current.slice):
            return True
        if isinstance(current, ast.Call):
            if any(k.arg in _DECRYPTING_KEYWORDS and _truthy(k.value) for k in current.keywords):
                return True
            reads_key = isinstance(current.func, ast.Attribute) and current.func.attr == "get" and current.args
            if reads_key and _sensitive_constant(current.args[0]):
                return True
            if isinstance(current.func, ast.Name) and current.func.id in _SHAPE_FUNCTIONS:
                continue  # the shape of a secret is not the secret
        if isinstance(current, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        stack.extend(ast.iter_child_nodes(current))
    return False


def _sensitive_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and sensitive_name(node.value)


def _truthy(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)


def _check_compare(source: SourceFile, node: ast.Compare, tainted: frozenset[str]) -> Iterator[Violation]:
    left = node.left
    for op, right in zip(node.ops, node.comparators, strict=True):
        operator = _equality(op)
        if operator is not None and (_mentions_secret(left, tainted) or _mentions_secret(right, tainted)):
            yield _violation(source, node, f"compares with {operator}")
        elif isinstance(op, ast.In | ast.NotIn) and (
            _mentions_secret(left, tainted)
            or (isinstance(right, ast.Tuple | ast.List | ast.Set) and _mentions_secret(right, tainted))
        ):
            # Membership is an equality against each element in turn.
            yield _violation(source, node, f"tests membership with {'in' if isinstance(op, ast.In) else 'not in'}")
        left = right


def _equality(op: ast.cmpop) -> str | None:
    if isinstance(op, ast.Eq):
        return "=="
    if isinstance(op, ast.NotEq):
        return "!="
    return None


def _violation(source: SourceFile, node: ast.Compare, how: str) -> Violation:
    text = ast.unparse(node)
    if len(text) > 80:
        text = text[:77] + "..."
    return Violation(
        SECRET_COMPARISON,
        source.relative,
        source.owner,
        f"{source.module} {how} on a secret value ({text}): it returns sooner the earlier the values differ",
        _FIX,
        line=node.lineno,
    )


SECRET_COMPARISON_RULE = Rule(
    SECRET_COMPARISON,
    "no ==, != or `in` on a secret value in functions/ or layers/: hmac.compare_digest over digests",
    check_secret_comparison,
)
