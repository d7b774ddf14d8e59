"""Rule `tenant-keys-spread`: a job's table keyed by the tenant spreads each tenant over several
partition key values.

DynamoDB serves one partition key value from one physical partition, and a partition takes at
most 1,000 write units per second ("Best practices for designing and using partition keys
effectively"): a table whose partition key is the tenant serves a tenant's writes at 1,000 units
a second whatever its throughput, 500 transactional item writes, so 1M items of one tenant take
2,000 s. A platform's biggest tenant is the one this hits. AWS's remedy is write sharding: the
key `<tenant>#<bucket>`, the bucket from the item's id (`clockless.dynamo.bucketed_key`,
docs/fan-out.md#a-whale-tenant). `make bench-model` measures what a night then takes; this rule
fails the table that would bind on one key before anything is deployed.

A table counts as keyed by the tenant when its partition key attribute's name starts with
`tenant`; each table a job declares its own (`Metadata: clockless: tables`) is checked against
the code of the function that declares it: some call of `bucketed_key` there must spread a
tenant over at least `MIN_BUCKETS` values, its bucket count a literal or a module constant the
syntax can read (`TENANT_BUCKETS: Final = 16`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from clockless_tools.architecture.constants import integer_of
from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation

TENANT_KEYS_SPREAD: Final = "tenant-keys-spread"
TENANT_ATTRIBUTE_PREFIX: Final = "tenant"
SPREADING_CALL: Final = "bucketed_key"
MIN_BUCKETS: Final = 2
_BUCKETS_ARGUMENT: Final = 2  # bucketed_key(tenant_id, item_id, buckets)
_FIX: Final = (
    "key the table <tenant>#<bucket>: clockless.dynamo.bucketed_key(tenant_id, item_id, TENANT_BUCKETS) with "
    "TENANT_BUCKETS: Final = 16 in the job's repository (docs/fan-out.md#a-whale-tenant)"
)
_ONE_KEY: Final = (
    "one tenant is one partition's 1,000 write units per second (500 transactional items/s: 1M items of one "
    "tenant take 2,000 s, whatever the table's throughput)"
)


def check_tenant_keys_spread(project: Project) -> Iterator[Violation]:
    template = project.template
    tables = template.tables
    for logical_id, fn in template.functions.items():
        code_dir = project.code_dir(fn)
        if code_dir is None:
            continue
        sources = [s for s in project.sources if _under(s.path, code_dir / fn.package_dir)]
        for table in fn.declared_tables:
            attribute = _partition_key(tables.get(table) or {})
            if attribute is None or not attribute.startswith(TENANT_ATTRIBUTE_PREFIX):
                continue
            problem = _spread_problem(project, sources)
            if problem is not None:
                yield Violation(
                    TENANT_KEYS_SPREAD,
                    project.template_file,
                    table,
                    f"{table} is keyed by the tenant ({attribute}) and {logical_id}'s code "
                    f"({fn.code_uri}{fn.package_dir}) {problem}",
                    _FIX,
                )


def _spread_problem(project: Project, sources: list[SourceFile]) -> str | None:
    """Why the code does not spread a tenant over several keys, or None when it does."""
    counts: list[tuple[SourceFile, int, int | None]] = []
    for source in sources:
        for node in ast.walk(source.tree):
            if isinstance(node, ast.Call) and _called(node) == SPREADING_CALL:
                argument = _buckets_argument(node)
                count = None if argument is None else integer_of(project, source, argument)
                counts.append((source, node.lineno, count))
    if not counts:
        return f"never calls {SPREADING_CALL}: each tenant is one key value, so {_ONE_KEY}"
    if any(count is not None and count >= MIN_BUCKETS for _, _, count in counts):
        return None
    source, line, count = counts[0]
    if count is None:
        return (
            f"calls {SPREADING_CALL} with a bucket count the syntax cannot read ({source.relative}:{line}): "
            "declare it as a literal or a module constant"
        )
    return f"spreads each tenant over {count} key value ({source.relative}:{line}), so {_ONE_KEY}"


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _buckets_argument(call: ast.Call) -> ast.expr | None:
    keyword = next((k.value for k in call.keywords if k.arg == "buckets"), None)
    if keyword is not None:
        return keyword
    return call.args[_BUCKETS_ARGUMENT] if len(call.args) > _BUCKETS_ARGUMENT else None


def _partition_key(properties: Mapping[str, Any]) -> str | None:
    for element in properties.get("KeySchema") or []:
        if isinstance(element, Mapping) and element.get("KeyType") == "HASH":
            name = element.get("AttributeName")
            return name if isinstance(name, str) else None
    return None


def _under(path: Path, directory: Path) -> bool:
    return path.resolve().is_relative_to(directory.resolve())


TENANT_KEYS_SPREAD_RULE = Rule(
    TENANT_KEYS_SPREAD,
    "a job's table keyed by the tenant spreads each tenant over several partition key values (bucketed_key)",
    check_tenant_keys_spread,
)
