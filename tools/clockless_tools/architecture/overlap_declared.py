"""Rule `overlap-declared`: a job's overlap policy (`ScheduledJob(..., overlap=...)`, what a tick
arriving while an earlier one still runs does: clockless.overlap) is one the kit knows, stated so
a reader and this rule can see it, and one the job can keep.

- the value is `"run-both"`, `"skip"` or `"buffer"` (a literal, a module constant naming one, or
  `Overlap.<NAME>`); a misspelling would fail only when the function is first imported in AWS;
- `buffer` is for a job that fans out (a worker declares `worker_of` the function): the worker
  that finds the earlier tick settled starts the buffered one, and a job without workers would
  leave it buffered for ever.

Absent, the policy is `run-both`, the behaviour of a job that declares nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Final

from clockless.overlap import Overlap
from clockless_tools.architecture.code import assignment, module_imports, qualified_name, string_constants, string_value
from clockless_tools.architecture.project import KIT_PACKAGE, Project, Rule, Violation

OVERLAP_DECLARED: Final = "overlap-declared"
OVERLAP_KEYWORD: Final = "overlap"

_SCHEDULED_JOB = {f"{KIT_PACKAGE}.ScheduledJob", f"{KIT_PACKAGE}.job.ScheduledJob"}
_OVERLAP_ENUM = {f"{KIT_PACKAGE}.overlap.Overlap", f"{KIT_PACKAGE}.Overlap"}
_ALLOWED: Final = ", ".join(f'"{policy.value}"' for policy in Overlap)


def check_overlap_declared(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.scheduled_functions.items():
        location = project.handler_location(fn)
        if location.path is None:
            continue  # scheduled-by-kit reports a handler that names no module
        source = project.source(location.path)
        imports = module_imports(source.tree)
        constants = string_constants(source.tree)
        for statement in source.tree.body:
            _, value = assignment(statement)
            if not (isinstance(value, ast.Call) and qualified_name(value.func, imports) in _SCHEDULED_JOB):
                continue
            node = next((k.value for k in value.keywords if k.arg == OVERLAP_KEYWORD), None)
            if node is None:
                continue
            problem = _problem(_policy(node, imports, constants), node, bool(project.template.workers_of(logical_id)))
            if problem is not None:
                message, fix = problem
                yield Violation(OVERLAP_DECLARED, source.relative, logical_id, message, fix, line=node.lineno)


def _problem(policy: Overlap | None, node: ast.expr, fans_out: bool) -> tuple[str, str] | None:
    if policy is None:
        return (
            f"overlap={ast.unparse(node)} is not a policy the kit knows (one of {_ALLOWED}) "
            "stated as a literal: the function fails when it is first imported",
            f'overlap="skip" (or another of {_ALLOWED}), or leave it out for "run-both"',
        )
    if policy is Overlap.BUFFER and not fans_out:
        return (
            'overlap="buffer", but no worker declares worker_of this function: a buffered tick is '
            "started by the worker that settles the tick before it, so it would stay buffered for ever",
            'overlap="skip", or fan the job out (FanOut and a worker with worker_of)',
        )
    return None


def _policy(node: ast.expr, imports: dict[str, str], constants: dict[str, str]) -> Overlap | None:
    text = string_value(node, constants)
    if text is not None:
        return Overlap(text) if text in Overlap._value2member_map_ else None
    if isinstance(node, ast.Attribute) and qualified_name(node.value, imports) in _OVERLAP_ENUM:
        return Overlap.__members__.get(node.attr)
    return None


OVERLAP_DECLARED_RULE = Rule(
    OVERLAP_DECLARED,
    'every job\'s overlap policy is "run-both" (default), "skip" or "buffer", and "buffer" only where workers start it',
    check_overlap_declared,
)
