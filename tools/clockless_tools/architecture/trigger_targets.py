"""Rule `trigger-targets`: the HTTP trigger delivers exactly the template's jobs, each to the function its schedule
invokes, and may invoke nothing else.

A function that reads `JOB_FUNCTIONS` (job -> function ARN, written in template.yaml) is a
trigger: a job missing from the map cannot be pressed, a job mapped to the wrong function runs
the wrong code with a valid tick, and `lambda:InvokeFunction` on any other function is more
than the trigger needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function

TRIGGER_TARGETS: Final = "trigger-targets"
JOB_MAP_VARIABLE: Final = "JOB_FUNCTIONS"
_FUNCTION_TYPES: Final = ("AWS::Serverless::Function", "AWS::Lambda::Function")


def check_trigger_targets(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.functions.items():
        if JOB_MAP_VARIABLE in fn.environment:
            yield from _check_trigger(project, logical_id, fn)


def _check_trigger(project: Project, logical_id: str, fn: Function) -> Iterator[Violation]:
    def violation(message: str, fix: str) -> Violation:
        return Violation(TRIGGER_TARGETS, project.template_file, logical_id, message, fix)

    names = LocalNames()
    expected = {job: project.template.function_for_job(job).logical_id for job in project.template.jobs}
    arn_of = {
        str(resolve({"Fn::GetAtt": [function_id, "Arn"]}, project.template, names)): function_id
        for function_id in project.template.functions
    }
    try:
        mapped = json.loads(str(resolve(fn.environment[JOB_MAP_VARIABLE], project.template, names)))
    except (TemplateError, json.JSONDecodeError) as error:
        yield violation(f"{JOB_MAP_VARIABLE} is not a JSON object of job -> function ARN: {error}", _MAP_FIX)
        return
    if not isinstance(mapped, Mapping):
        yield violation(f"{JOB_MAP_VARIABLE} is not a JSON object of job -> function ARN", _MAP_FIX)
        return
    for job, function_id in sorted(expected.items()):
        if job not in mapped:
            yield violation(
                f"{JOB_MAP_VARIABLE} lacks job {job!r}: the trigger would answer 404 for a scheduled job",
                f'add "{job}": "${{{function_id}.Arn}}"',
            )
        elif arn_of.get(str(mapped[job])) != function_id:
            yield violation(
                f"{JOB_MAP_VARIABLE} sends job {job!r} to {mapped[job]!r}, not to {function_id}, which its schedule "
                "invokes",
                f'map "{job}" to "${{{function_id}.Arn}}"',
            )
    for job in sorted(set(mapped) - set(expected)):
        yield violation(
            f"{JOB_MAP_VARIABLE} names job {job!r}, which no schedule in the template runs",
            f"remove {job!r}, or give its function a ScheduleV2 event whose Input names it",
        )
    invocable = _invocable_functions(project, fn)
    for function_id in sorted(set(expected.values()) - invocable):
        yield violation(
            f"no policy statement allows lambda:InvokeFunction on {function_id}: delivering its job would fail",
            f"add !GetAtt {function_id}.Arn to the statement allowing lambda:InvokeFunction",
        )
    for function_id in sorted(invocable - set(expected.values())):
        yield violation(
            f"lambda:InvokeFunction is allowed on {function_id}, which runs no job of {JOB_MAP_VARIABLE}",
            f"drop {function_id} from the statement",
        )


_MAP_FIX: Final = 'write it as !Sub \'{"<job>": "${<Function>.Arn}", ...}\', one entry per scheduled job'


def _invocable_functions(project: Project, fn: Function) -> set[str]:
    """Functions of this template the function's policies allow lambda:InvokeFunction on."""
    invocable: set[str] = set()
    policies = fn.prop("Policies") or []
    for policy in policies if isinstance(policies, list) else [policies]:
        if not isinstance(policy, Mapping):
            continue
        statements = policy.get("Statement") or []
        for statement in statements if isinstance(statements, list) else [statements]:
            if isinstance(statement, Mapping) and statement.get("Effect") == "Allow" and _invokes(statement):
                invocable |= project.ids_of_type(statement.get("Resource"), *_FUNCTION_TYPES)
        for template_name, parameters in policy.items():
            if template_name == "LambdaInvokePolicy":
                invocable |= project.ids_of_type(parameters, *_FUNCTION_TYPES)
    return invocable


def _invokes(statement: Mapping[str, Any]) -> bool:
    actions = statement.get("Action")
    return any(
        isinstance(action, str) and action.lower() in ("lambda:invokefunction", "lambda:*", "*")
        for action in (actions if isinstance(actions, list) else [actions])
    )


TRIGGER_TARGETS_RULE = Rule(
    TRIGGER_TARGETS,
    "a trigger's JOB_FUNCTIONS maps every scheduled job to its own function, and it may invoke only those",
    check_trigger_targets,
)
