"""Rule `shards-match-concurrency`: a fanned-out job's partition count and its worker's
`ScalingConfig.MaximumConcurrency` are the same number.

A partition is a run of one worker over one shard key of the job's index, so the partitions bound
how many workers have anything to do: a `MaximumConcurrency` above them buys only idle invocations
(and takes concurrency from the account), one below them leaves shards waiting for a worker, so
the night lasts longer than the slowest shard needs, and each shard key's write limit (1,000 write
units per second, docs/fan-out.md#capacity) is left unused. Without `MaximumConcurrency` Lambda
scales the poller to the queue's depth (up to 1,000), with the same effect. Neither cfn-lint nor
the SAM CLI can relate the two: one is in code (`FanOut(job, partitions=...)`), one in the template.

The partition count is read from the handler's syntax tree, never imported: a literal tuple or
list, `tuple(... for _ in range(N))`, or names bound to them (followed through imports). A job
declared in `Mappings: Jobs:` sets its count as `Shards` (the loop writes `MaximumConcurrency` and
its page's line from it), so the fix names that key.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.code import last_binding, made_by
from clockless_tools.architecture.constants import MAX_HOPS, bound_value, integer_of
from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation
from clockless_tools.architecture.worker_by_kit import FAN_OUT, bound_call

SHARDS_MATCH_CONCURRENCY: Final = "shards-match-concurrency"
_SEQUENCES: Final = frozenset({"tuple", "list", "frozenset", "set"})


def check_shards_match_concurrency(project: Project) -> Iterator[Violation]:
    template = project.template
    for logical_id, fn in template.worker_functions.items():
        found = _partitions_of(project, logical_id)
        if found is None:
            continue  # no FanOut to read: worker-by-kit says why
        source, line, count = found
        if count is None:
            yield Violation(
                SHARDS_MATCH_CONCURRENCY,
                source.relative,
                logical_id,
                "the FanOut's partitions are not a literal sequence, a range, or names bound to one: their count "
                "cannot be matched to the worker's MaximumConcurrency",
                "partitions=tuple(str(shard) for shard in range(SHARDS)) with SHARDS: Final = <n>",
                line=line,
            )
            continue
        for mapping in template.mappings_of(logical_id):
            if mapping.source not in template.queues:
                continue
            concurrency = mapping.maximum_concurrency
            if concurrency == count:
                continue
            stated = "not set (the poller scales up to 1,000)" if concurrency is None else str(concurrency)
            effect = (
                "shards wait for a worker while the others finish"
                if concurrency is not None and concurrency < count
                else "workers beyond the partitions have nothing to do"
            )
            yield Violation(
                SHARDS_MATCH_CONCURRENCY,
                project.template_file,
                mapping.logical_id,
                f"ScalingConfig.MaximumConcurrency is {stated}, but {fn.logical_id}'s FanOut has {count} "
                f"partitions ({source.relative}:{line}): {effect}",
                f"ScalingConfig: {{MaximumConcurrency: {count}}} (or change the shard count)",
            )


def _partitions_of(project: Project, logical_id: str) -> tuple[SourceFile, int, int | None] | None:
    """(the module declaring the worker's FanOut, its line, its partition count or None)."""
    fn = project.template.functions[logical_id]
    location = project.handler_location(fn)
    if location.path is None:
        return None
    source = project.source(location.path)
    binding = last_binding(source.tree, location.attribute)
    if binding is None:
        return None
    for name in made_by(binding, "worker"):
        found = bound_call(project, source, name, FAN_OUT)
        if found is None:
            continue
        where, statement, call = found
        partitions = next((k.value for k in call.keywords if k.arg == "partitions"), None)
        if partitions is None and len(call.args) > 1:
            partitions = call.args[1]
        return where, statement.lineno, None if partitions is None else _count(project, where, partitions, 0)
    return None


def _count(project: Project, source: SourceFile, node: ast.expr, depth: int) -> int | None:
    """How many elements the sequence expression has, if the syntax says."""
    if depth > MAX_HOPS:
        return None
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return len(node.elts) if not any(isinstance(e, ast.Starred) for e in node.elts) else None
    if isinstance(node, ast.Name):
        found = bound_value(project, source, node.id, depth)
        return None if found is None else _count(project, found[0], found[1], depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _call_count(project, source, node, node.func.id, depth)
    return None


def _call_count(project: Project, source: SourceFile, node: ast.Call, function: str, depth: int) -> int | None:
    """`range(...)`, `tuple(range(...))`, `tuple(... for _ in range(...))` and the like."""
    if function == "range":
        return _range_length(project, source, node, depth)
    if function not in _SEQUENCES or len(node.args) != 1 or node.keywords:
        return None
    argument = node.args[0]
    if isinstance(argument, ast.GeneratorExp | ast.ListComp):
        generators = argument.generators
        # a set could collapse equal elements; a filter drops some
        if function in ("set", "frozenset") or len(generators) != 1 or generators[0].ifs:
            return None
        return _count(project, source, generators[0].iter, depth + 1)
    return _count(project, source, argument, depth + 1) if function in ("tuple", "list") else None


def _range_length(project: Project, source: SourceFile, call: ast.Call, depth: int) -> int | None:
    bounds = [integer_of(project, source, argument, depth + 1) for argument in call.args]
    if call.keywords or not 1 <= len(bounds) <= 3 or any(bound is None for bound in bounds):
        return None
    return len(range(*(bound for bound in bounds if bound is not None)))


SHARDS_MATCH_CONCURRENCY_RULE = Rule(
    SHARDS_MATCH_CONCURRENCY,
    "each fanned-out job's worker has a ScalingConfig.MaximumConcurrency equal to its FanOut's partition count",
    check_shards_match_concurrency,
)
