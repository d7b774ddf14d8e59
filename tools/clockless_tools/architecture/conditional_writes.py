"""Rule `conditional-writes`: every write a job's code makes to DynamoDB carries a condition.

The idempotency record makes a second delivery of a tick a duplicate only while it lives; a tick
delivered after it expired (a late Lambda retry, a backfill, a replayed partition) runs again, and
only the domain writes' own conditions (`the item is still due`, `the window is new`) keep that run
from applying anything twice. A write without one passes every other rule and the simulation
(whose deliveries all fall inside the record's life), so this rule reads the job's code for them:

- PynamoDB's `Model.save/update/delete` and `TransactWrite.save/update/delete` need `condition=`
  (an `update` is told from `dict.update` by its `actions`, `condition` or model argument);
- the low-level actions a fanned-out job's `PartitionWork.writes` returns,
  `get_save_kwargs_from_instance`, `get_update_kwargs_from_instance` and
  `get_delete_kwargs_from_instance`, need `condition=`; a `{"Put"|"Update"|"Delete": {...}}`
  written out needs `"ConditionExpression"`;
- `put_item`, `update_item` and `delete_item` (boto3's client, PynamoDB's connection) need
  `ConditionExpression=` or `condition=`;
- a batch write (`Model.batch_write()`, `batch_write_item`) cannot carry a condition at all: it is
  refused in any function the job's own modules call, and allowed only in one nothing but the
  demo seed (`demo.py`) and tests reach, such as the skeleton's `save_items`.

A condition that cannot fail once the write applied is no condition: a literal (`condition=True`),
a tautology (`attribute_exists(pk) OR attribute_not_exists(pk)`, `M.a.exists() | M.a.does_not_exist()`),
or, on a save or an update, only `exists()` of the model's own hash or range key (the written item
has its key, so a second delivery passes it again; on a delete it does fail). Conditions are read
through module-level constants and one-`return` helpers of the same file. A key's `exists()` guards a
platform write path against creating a row (the skeleton's demo seed, `log_exercise`), so like a
batch write it is refused only where the job's own modules call it; a literal or a tautology always.

Scope: the packages of scheduled functions and their workers (the kit's writes are conditional by
their own tests; the HTTP trigger writes nothing of a job's). `demo.py` is seed data and not checked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from clockless_tools.architecture.code import assignment, with_scopes
from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation, per_file

CONDITIONAL_WRITES: Final = "conditional-writes"

_MODEL_WRITES: Final = frozenset({"save", "update", "delete"})
_ACTION_BUILDERS: Final = {
    "get_save_kwargs_from_instance": "a transaction Put",
    "get_update_kwargs_from_instance": "a transaction Update",
    "get_delete_kwargs_from_instance": "a transaction Delete",
}
_CLIENT_WRITES: Final = frozenset({"put_item", "update_item", "delete_item"})
_ACTION_KEYS: Final = frozenset({"Put", "Update", "Delete"})
_CONDITION_KEYWORDS: Final = frozenset({"condition", "ConditionExpression"})
_BATCH: Final = frozenset({"batch_write", "batch_write_item"})
_SEED_MODULE: Final = "demo"

_FIX: Final = (
    "pass condition= (PynamoDB) or ConditionExpression (boto3) that fails once the item is done, "
    "e.g. condition=ItemModel.due_shard.exists()"
)
_UNFAILING_FIX: Final = (
    "make the condition fail once the write applied: on what the write changes (e.g. condition=ItemModel.due_shard"
    ".exists() where the update removes due_shard, condition=WindowModel.program_key.does_not_exist() on a save)"
)
_DEPTH: Final = 8  # how far a condition is followed through constants, helpers and nesting
_TAUTOLOGY: Final = re.compile(
    r"^\(?\s*attribute_(not_)?exists\s*\(\s*([#\w.]+)\s*\)\s*\)?\s+or\s+\(?\s*attribute_(not_)?exists\s*\(\s*([#\w.]+)\s*\)\s*\)?$",
    re.IGNORECASE,
)
_BATCH_FIX: Final = (
    "write each item with a conditional save/update/delete (or a TransactWrite); keep batch writes to the demo "
    "seed's path (a repository method only demo.py and tests call)"
)


@dataclass(frozen=True, slots=True)
class Write:
    where: str  # module.Class.function the write sits in
    function: str  # the innermost function's name ("" at module level)
    what: str  # e.g. "Model.update", "a transaction Put"
    line: int
    batch: bool = False
    unfailing: str = ""  # why its condition cannot fail once it applied
    on_key: bool = False  # only because it names the item's own key: refused where the job's code calls it


def check_conditional_writes(project: Project) -> Iterator[Violation]:
    template = project.template
    jobs = set(template.scheduled_functions) | set(template.worker_functions)
    by_owner: dict[str, list[SourceFile]] = {}
    for source in project.sources:
        if source.owner in jobs and source.module.rpartition(".")[2] != _SEED_MODULE:
            by_owner.setdefault(source.owner, []).append(source)
    for owner, sources in by_owner.items():
        for source in sources:
            for write in _writes(source):
                if write.unfailing:
                    callers = _callers(write.function, sources) if write.on_key else ["-"]
                    if callers:
                        message = (
                            f"{write.where} makes {write.what} with a condition that cannot fail once it applied "
                            f"({write.unfailing}): a delivery after the idempotency record expired would apply it again"
                        )
                        if write.on_key:
                            message += f"; the job's code calls it ({', '.join(callers)})"
                        yield Violation(
                            CONDITIONAL_WRITES, source.relative, owner, message, _UNFAILING_FIX, line=write.line
                        )
                    continue
                if not write.batch:
                    message = f"{write.where} makes {write.what} without a condition: a delivery after the "
                    message += "idempotency record expired would apply it again"
                    yield Violation(CONDITIONAL_WRITES, source.relative, owner, message, _FIX, line=write.line)
                    continue
                callers = _callers(write.function, sources)
                if callers:
                    message = (
                        f"{write.where} makes {write.what}, which carries no condition, and the job's code calls it "
                        f"({', '.join(callers)})"
                    )
                    yield Violation(CONDITIONAL_WRITES, source.relative, owner, message, _BATCH_FIX, line=write.line)


@per_file
def _writes(source: SourceFile) -> Iterator[Write]:
    batches = _batch_names(source.tree)
    conditions = _Conditions(source.tree)
    for node, scope in with_scopes(source.tree):
        where = ".".join([source.module, *scope])
        function = scope[-1] if scope else ""
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                action = key.value if isinstance(key, ast.Constant) else None
                if action in _ACTION_KEYS and isinstance(value, ast.Dict):
                    condition = _condition_key(value)
                    what = f"a transaction {action}"
                    if condition is None:
                        yield Write(where, function, what, node.lineno)
                    elif reason := conditions.unfailing(condition, deletes=action == "Delete"):
                        yield Write(where, function, what, node.lineno, unfailing=reason[0], on_key=reason[1])
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, node.func.value
        if method in _BATCH:
            yield Write(where, function, f"a batch write ({method})", node.lineno, batch=True)
            continue
        if method in _MODEL_WRITES and isinstance(receiver, ast.Name) and receiver.id in batches:
            continue  # a batch's save/delete: the batch_write() call is the finding
        named = _write_named(method, node)
        if named is None:
            continue
        if not _has_condition(node):
            yield Write(where, function, named, node.lineno)
        elif reason := conditions.unfailing(_condition(node), deletes="delete" in method):
            yield Write(where, function, named, node.lineno, unfailing=reason[0], on_key=reason[1])


def _write_named(method: str, call: ast.Call) -> str | None:
    """What a call writes, as a violation names it; None when it is no write this rule reads."""
    if method in _MODEL_WRITES and _is_model_write(method, call):
        return f"{method}()"
    if method in _ACTION_BUILDERS:
        return _ACTION_BUILDERS[method]
    if method in _CLIENT_WRITES and not _spreads_unknown(call):
        return f"{method}()"
    return None


def _condition(call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg in _CONDITION_KEYWORDS:
            return keyword.value
        if keyword.arg is None and isinstance(keyword.value, ast.Dict):
            found = _condition_key(keyword.value)
            if found is not None:
                return found
    return None


def _condition_key(mapping: ast.Dict) -> ast.expr | None:
    for key, value in zip(mapping.keys, mapping.values, strict=True):
        if isinstance(key, ast.Constant) and key.value == "ConditionExpression":
            return value
    return None


class _Conditions:
    """Whether a condition can fail once its write applied, read through the file's module-level
    constants, its one-`return` helpers and its models' key attributes."""

    def __init__(self, tree: ast.Module) -> None:
        self.bound: dict[str, ast.expr] = {}
        self.returns: dict[str, ast.expr] = {}
        self.keys: set[tuple[str, str]] = set()  # (model class, attribute) of hash and range keys
        for statement in tree.body:
            target, value = assignment(statement)
            if isinstance(target, ast.Name) and value is not None:
                self.bound[target.id] = value
            elif isinstance(statement, ast.FunctionDef):
                returns = [node for node in ast.walk(statement) if isinstance(node, ast.Return)]
                if len(returns) == 1 and returns[0].value is not None:
                    self.returns[statement.name] = returns[0].value
            elif isinstance(statement, ast.ClassDef):
                self.keys |= {(statement.name, name) for name in _key_attributes(statement)}

    def unfailing(self, node: ast.expr | None, *, deletes: bool, depth: int = 0) -> tuple[str, bool] | None:
        """(why it cannot fail, whether only because it names the key), or None when it can fail."""
        if node is None or depth > _DEPTH:
            return None
        node = self._followed(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return _string_tautology(node.value)
            return (f"the literal {node.value!r}", False) if node.value else None
        parts = self._parts(node)
        if parts is not None:
            return self._combined(*parts, deletes=deletes, depth=depth)
        named = self._key_exists(node)
        return (f"exists() of the item's own key {named}", True) if named and not deletes else None

    def _combined(self, kind: str, terms: list[ast.expr], *, deletes: bool, depth: int) -> tuple[str, bool] | None:
        found = [self.unfailing(term, deletes=deletes, depth=depth + 1) for term in terms]
        if kind == "or":
            tautology = self._complementary(terms)
            return (tautology, False) if tautology else next((reason for reason in found if reason), None)
        reasons = [reason for reason in found if reason]
        if len(reasons) < len(found):
            return None  # an And with one term that can fail can fail
        return "; ".join(reason for reason, _ in reasons), all(on_key for _, on_key in reasons)

    def _followed(self, node: ast.expr) -> ast.expr:
        for _ in range(_DEPTH):
            if isinstance(node, ast.Name) and node.id in self.bound:
                node = self.bound[node.id]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.returns:
                node = self.returns[node.func.id]
            else:
                break
        return node

    def _parts(self, node: ast.expr) -> tuple[str, list[ast.expr]] | None:
        """An Or/And as PynamoDB writes it: `a | b`, `a & b`, `Or(a, b)`, `And(a, b)`."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr | ast.BitAnd):
            return ("or" if isinstance(node.op, ast.BitOr) else "and"), [node.left, node.right]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name in {"Or", "And"} and node.args:
                return name.lower(), list(node.args)
        return None

    def _complementary(self, terms: list[ast.expr]) -> str:
        """`M.a.exists() | M.a.does_not_exist()`: one of them holds whatever the item."""
        tested: dict[str, set[str]] = {}
        for written in terms:
            term = self._followed(written)
            if (
                isinstance(term, ast.Call)
                and isinstance(term.func, ast.Attribute)
                and term.func.attr in {"exists", "does_not_exist"}
            ):
                tested.setdefault(ast.unparse(term.func.value), set()).add(term.func.attr)
        both = sorted(name for name, tests in tested.items() if tests == {"exists", "does_not_exist"})
        return f"{both[0]}.exists() | {both[0]}.does_not_exist() holds for any item" if both else ""

    def _key_exists(self, node: ast.expr) -> str:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "exists"
            and isinstance(node.func.value, ast.Attribute)
            and isinstance(node.func.value.value, ast.Name)
            and (node.func.value.value.id, node.func.value.attr) in self.keys
        ):
            return f"{node.func.value.value.id}.{node.func.value.attr}"
        return ""


def _key_attributes(model: ast.ClassDef) -> Iterator[str]:
    """The attributes a PynamoDB model declares with hash_key=True or range_key=True (not an index's:
    an index's keys are the model's attributes, which a write may remove)."""
    if any(isinstance(base, ast.Subscript) for base in model.bases):
        return  # GlobalSecondaryIndex["Model"]
    for statement in model.body:
        target, value = assignment(statement)
        if isinstance(target, ast.Name) and isinstance(value, ast.Call):
            for keyword in value.keywords:
                if keyword.arg in {"hash_key", "range_key"} and _is_true(keyword.value):
                    yield target.id


def _is_true(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _string_tautology(expression: str) -> tuple[str, bool] | None:
    """`attribute_exists(pk) OR attribute_not_exists(pk)`: true for any item."""
    match = _TAUTOLOGY.match(" ".join(expression.split()))
    if match and match.group(2) == match.group(4) and bool(match.group(1)) != bool(match.group(3)):
        return f"{expression!r} holds for any item", False
    return None


def _is_model_write(method: str, call: ast.Call) -> bool:
    """save()/delete() always; update() only as PynamoDB calls it (not dict.update(other))."""
    if method != "update":
        return True
    keywords = {keyword.arg for keyword in call.keywords}
    if keywords & {"actions", "condition"}:
        return True
    return not call.args or len(call.args) >= 2 or isinstance(call.args[0], ast.List)


def _has_condition(call: ast.Call) -> bool:
    for keyword in call.keywords:
        if keyword.arg in _CONDITION_KEYWORDS:
            return not (isinstance(keyword.value, ast.Constant) and keyword.value.value is None)
        if keyword.arg is None and isinstance(keyword.value, ast.Dict) and _has_condition_key(keyword.value):
            return True
    return False


def _spreads_unknown(call: ast.Call) -> bool:
    """`client.put_item(**kwargs)` built elsewhere: the builder (a get_*_kwargs call or a dict
    literal) is where its condition is checked."""
    return any(keyword.arg is None and not isinstance(keyword.value, ast.Dict) for keyword in call.keywords)


def _has_condition_key(mapping: ast.Dict) -> bool:
    return any(isinstance(key, ast.Constant) and key.value == "ConditionExpression" for key in mapping.keys)


def _batch_names(tree: ast.Module) -> set[str]:
    """Names bound by `with Model.batch_write() as NAME`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr in _BATCH
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    names.add(item.optional_vars.id)
    return names


def _callers(function: str, sources: Sequence[SourceFile]) -> list[str]:
    """Where the job's own modules (not the seed) refer to `function`, outside its own body."""
    if not function:
        return ["module level"]
    found = []
    for source in sources:
        for node, scope in with_scopes(source.tree):
            if not isinstance(node, ast.Attribute | ast.Name):
                continue
            named = node.attr if isinstance(node, ast.Attribute) else node.id
            if named == function and (not scope or scope[-1] != function):
                found.append(f"{source.module}:{node.lineno}")
    return found


CONDITIONAL_WRITES_RULE = Rule(
    CONDITIONAL_WRITES,
    "every write a job's code makes (save/update/delete, transaction actions, put/update/delete_item) carries a "
    "condition that can fail once it applied; batch writes only on the demo seed's path",
    check_conditional_writes,
)
