"""Rule `overlap-declared`: a job's overlap policy (`ScheduledJob(..., overlap=...)`, what a tick
arriving while an earlier one still runs does: clockless.overlap) is one the kit knows, stated so
a reader and this rule can see it, and one the job can keep.

- the value is `"run-both"`, `"skip"` or `"buffer"` (a literal, a module constant naming one, or
  `Overlap.<NAME>`); a misspelling would fail only when the function is first imported in AWS;
- `buffer` is for a job that fans out (a worker declares `worker_of` the function): the worker
  that finds the earlier tick settled starts the buffered one, and a job without workers would
  leave it buffered for ever.

Absent, the policy is `run-both`, the behaviour of a job that declares nothing.

And the functions may make the ledger calls the policy adds (moto enforces no IAM, so only this
says so before AWS refuses them): a `skip` or `buffer` job's scheduled function `dynamodb:Query`,
`dynamodb:PutItem` and `dynamodb:ConditionCheckItem` on the ledger (`LEDGER_TABLE_NAME`: the
earlier tick read, the held tick recorded beside a check that the earlier one still runs); a
`buffer` job's workers `dynamodb:Query` on the ledger's `succeeded-by-time` index (a buffered
tick's start runs the job's function, and `run.last_success` reads it). The template grants them
from the job's declaration (`Mappings.Jobs.<Id>.Overlap` picks a row of `OverlapGrants`): a
policy the code declares and the template does not grant is caught here; a grant for a policy
the code does not declare, by rule least-privilege (`overlap_calls` says what each policy sends).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from clockless.ledger import SUCCEEDED_INDEX
from clockless.overlap import Overlap
from clockless_tools.architecture.code import assignment, module_imports, qualified_name, string_constants, string_value
from clockless_tools.architecture.project import KIT_PACKAGE, Project, Rule, SourceFile, Violation
from clockless_tools.architecture.work_permissions import allowed, grants_of
from clockless_tools.template.model import Function
from clockless_tools.template.queues import resource_id

OVERLAP_DECLARED: Final = "overlap-declared"
OVERLAP_KEYWORD: Final = "overlap"

_SCHEDULED_JOB = {f"{KIT_PACKAGE}.ScheduledJob", f"{KIT_PACKAGE}.job.ScheduledJob"}
_OVERLAP_ENUM = {f"{KIT_PACKAGE}.overlap.Overlap", f"{KIT_PACKAGE}.Overlap"}
_ALLOWED: Final = ", ".join(f'"{policy.value}"' for policy in Overlap)
# What a held tick's record takes: the Query for the earlier tick, then Put + ConditionCheck in one transaction.
_HOLD: Final = ("dynamodb:Query", "dynamodb:PutItem", "dynamodb:ConditionCheckItem")


def check_overlap_declared(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.scheduled_functions.items():
        declared = _declaration(project, fn)
        if declared is None:
            continue
        source, node, policy = declared
        problem = _problem(policy, node, bool(project.template.workers_of(logical_id)))
        if problem is not None:
            message, fix = problem
            yield Violation(OVERLAP_DECLARED, source.relative, logical_id, message, fix, line=node.lineno)
        elif policy is not None and policy is not Overlap.RUN_BOTH:
            yield from _missing_grants(project, logical_id, policy)


def declared_overlap(project: Project, logical_id: str) -> Overlap | None:
    """The overlap policy the scheduled function's code declares (`run-both` when it states none),
    or None when it states one this rule refuses (the rule reports it)."""
    declared = _declaration(project, project.template.functions[logical_id])
    if declared is None:
        return Overlap.RUN_BOTH
    _, node, policy = declared
    if _problem(policy, node, bool(project.template.workers_of(logical_id))) is not None:
        return None
    return policy


def _declaration(project: Project, fn: Function) -> tuple[SourceFile, ast.expr, Overlap | None] | None:
    """The `overlap=` the function's `ScheduledJob(...)` states, and the policy it names, if any."""
    location = project.handler_location(fn)
    if location.path is None:
        return None  # scheduled-by-kit reports a handler that names no module
    source = project.source(location.path)
    imports = module_imports(source.tree)
    constants = string_constants(source.tree)
    for statement in source.tree.body:
        _, value = assignment(statement)
        if not (isinstance(value, ast.Call) and qualified_name(value.func, imports) in _SCHEDULED_JOB):
            continue
        node = next((k.value for k in value.keywords if k.arg == OVERLAP_KEYWORD), None)
        if node is not None:
            return source, node, _policy(node, imports, constants)
    return None


@dataclass(frozen=True, slots=True)
class LedgerCall:
    """A ledger request an overlap policy makes a function send: what `fn` needs `action` on `resource` for."""

    fn: Function
    resource: str
    action: str
    why: str


def overlap_calls(project: Project, logical_id: str, policy: Overlap) -> list[LedgerCall]:
    """The ledger requests `policy` adds to the scheduled function `logical_id` and its workers
    (none for `run-both`): a function's policies need them, and no more than the policy's."""
    template = project.template
    function = template.functions[logical_id]
    ledger = resource_id(function.environment.get("LEDGER_TABLE_NAME"))
    if ledger not in template.tables or policy is Overlap.RUN_BOTH:
        return []
    calls = [LedgerCall(function, ledger, action, "reads the earlier tick and records a held one") for action in _HOLD]
    if policy is Overlap.BUFFER:
        index = f"{ledger}/index/{SUCCEEDED_INDEX}"
        why = "starts a buffered tick by running the job's function, whose run.last_success reads it"
        calls += [LedgerCall(w, index, "dynamodb:Query", why) for w in template.workers_of(logical_id).values()]
    return calls


def _missing_grants(project: Project, logical_id: str, policy: Overlap) -> Iterator[Violation]:
    for call in overlap_calls(project, logical_id, policy):
        if not allowed(grants_of(project, call.fn), call.resource, call.action):
            yield Violation(
                OVERLAP_DECLARED,
                project.template_file,
                call.fn.logical_id,
                f"may not {call.action} on {call.resource}, which overlap={policy.value!r} of {logical_id} calls: "
                f"it {call.why}; AWS refuses it though every local run passes (moto enforces no IAM)",
                f"declare Overlap: {policy.value} in the job's Mappings.Jobs entry (OverlapGrants then grants it), "
                f"or add {call.action} on {_arn(call.resource)} to a statement of {call.fn.logical_id}'s Policies",
            )


def _arn(resource: str) -> str:
    table, _, index = resource.partition("/index/")
    return f'!Sub "${{{table}.Arn}}/index/{index}"' if index else f"!GetAtt {resource}.Arn"


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
    'every job\'s overlap policy is "run-both" (default), "skip" or "buffer", "buffer" only where workers start it, '
    "and its functions may make the ledger calls the policy adds",
    check_overlap_declared,
)
