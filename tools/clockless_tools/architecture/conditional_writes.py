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

Scope: the packages of scheduled functions and their workers (the kit's writes are conditional by
their own tests; the HTTP trigger writes nothing of a job's). `demo.py` is seed data and not checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from clockless_tools.architecture.code import with_scopes
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
    for node, scope in with_scopes(source.tree):
        where = ".".join([source.module, *scope])
        function = scope[-1] if scope else ""
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                action = key.value if isinstance(key, ast.Constant) else None
                if action in _ACTION_KEYS and isinstance(value, ast.Dict) and not _has_condition_key(value):
                    yield Write(where, function, f"a transaction {action}", node.lineno)
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, node.func.value
        if method in _BATCH:
            yield Write(where, function, f"a batch write ({method})", node.lineno, batch=True)
        elif method in _MODEL_WRITES and isinstance(receiver, ast.Name) and receiver.id in batches:
            continue  # a batch's save/delete: the batch_write() call is the finding
        elif method in _MODEL_WRITES and _is_model_write(method, node) and not _has_condition(node):
            yield Write(where, function, f"{method}()", node.lineno)
        elif method in _ACTION_BUILDERS and not _has_condition(node):
            yield Write(where, function, _ACTION_BUILDERS[method], node.lineno)
        elif method in _CLIENT_WRITES and not _has_condition(node) and not _spreads_unknown(node):
            yield Write(where, function, f"{method}()", node.lineno)


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
    "condition; batch writes only on the demo seed's path",
    check_conditional_writes,
)
