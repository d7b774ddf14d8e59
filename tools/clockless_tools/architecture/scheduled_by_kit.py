"""Rule `scheduled-by-kit`: every scheduled handler is a kit job (`@job.handler` of a `ScheduledJob`
named like its schedule's Input).

It reads the code's syntax tree, never its text: a comment or a string that mentions
`@job.handler` does not make a handler a job.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from clockless_tools.architecture.code import (
    assignment,
    last_binding,
    made_by,
    module_imports,
    qualified_name,
    string_constants,
    string_value,
)
from clockless_tools.architecture.project import KIT_PACKAGE, Project, Rule, SourceFile, Violation
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function, Schedule

SCHEDULED_BY_KIT: Final = "scheduled-by-kit"

_SCHEDULED_JOB = {f"{KIT_PACKAGE}.ScheduledJob", f"{KIT_PACKAGE}.job.ScheduledJob"}


def check_scheduled_by_kit(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.scheduled_functions.items():
        location = project.handler_location(fn)
        if location.path is None:
            yield Violation(
                SCHEDULED_BY_KIT,
                project.template_file,
                logical_id,
                f"Handler {fn.handler!r} names no module under CodeUri {fn.prop('CodeUri')!r}",
                "point Handler at <package>.handler.lambda_handler inside the function's CodeUri",
            )
            continue
        yield from _check_handler(project.source(location.path), logical_id, location.attribute, fn)


@dataclass(frozen=True, slots=True)
class _JobDeclaration:
    variable: str
    name: str | None
    line: int


def _check_handler(source: SourceFile, logical_id: str, attribute: str, fn: Function) -> Iterator[Violation]:
    tree = source.tree
    imports = module_imports(tree)
    constants = string_constants(tree)
    jobs = {job.variable: job for job in _job_declarations(tree, imports, constants)}

    binding = last_binding(tree, attribute)
    if binding is None:
        yield Violation(
            SCHEDULED_BY_KIT,
            source.relative,
            logical_id,
            f"{source.module} defines no {attribute!r}, which Handler {fn.handler!r} names",
            f"define {attribute} in {source.relative}, decorated with @job.handler",
        )
        return
    wrapped_by = _kit_wrapper(binding, jobs)
    if wrapped_by is None:
        reason = (
            f"{source.module} creates no {KIT_PACKAGE}.ScheduledJob"
            if not jobs
            else f"it is not decorated with @{next(iter(jobs))}.handler"
        )
        yield Violation(
            SCHEDULED_BY_KIT,
            source.relative,
            logical_id,
            f"handler {attribute} is not a scheduled job ({reason}): a redelivered tick runs again",
            f'job = ScheduledJob("<job>") at module level and decorate {attribute} with @job.handler',
            line=binding.lineno,
        )
        return
    yield from _check_job_name(source, logical_id, fn, wrapped_by)


def _job_declarations(
    tree: ast.Module, imports: dict[str, str], constants: dict[str, str]
) -> Iterator[_JobDeclaration]:
    for statement in tree.body:
        target, value = assignment(statement)
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
            continue
        if qualified_name(value.func, imports) not in _SCHEDULED_JOB:
            continue
        name_node = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "name"), None)
        yield _JobDeclaration(target.id, string_value(name_node, constants), statement.lineno)


def _kit_wrapper(binding: ast.stmt, jobs: dict[str, _JobDeclaration]) -> _JobDeclaration | None:
    """The job whose `.handler` makes `binding` the Lambda handler, if any."""
    return next((jobs[name] for name in made_by(binding, "handler") if name in jobs), None)


def _check_job_name(source: SourceFile, logical_id: str, fn: Function, job: _JobDeclaration) -> Iterator[Violation]:
    if job.name is None:
        yield Violation(
            SCHEDULED_BY_KIT,
            source.relative,
            logical_id,
            f"ScheduledJob {job.variable!r} is not named by a string literal or module constant, "
            "so it cannot be matched to the schedule's Input",
            'name the job with a literal: ScheduledJob("<job>") or JOB_NAME = "<job>"',
            line=job.line,
        )
        return
    for schedule in fn.schedules:
        scheduled_job = _input_job(schedule)
        if scheduled_job is not None and scheduled_job != job.name:
            yield Violation(
                SCHEDULED_BY_KIT,
                source.relative,
                logical_id,
                f"ScheduledJob({job.name!r}) but schedule {schedule.event_id}'s Input names job {scheduled_job!r}: "
                "the kit rejects every tick as malformed",
                f'use one job name in both places (ScheduledJob("{scheduled_job}") or the Input\'s "job")',
                line=job.line,
            )


def _input_job(schedule: Schedule) -> str | None:
    try:
        job = schedule.input().get("job")
    except TemplateError:
        return None  # tick-identity reports an unreadable Input
    return job if isinstance(job, str) else None


SCHEDULED_BY_KIT_RULE = Rule(
    SCHEDULED_BY_KIT,
    "every scheduled function's handler is made a job by the kit (@job.handler, job = ScheduledJob(...))",
    check_scheduled_by_kit,
)
