"""Rules 1 and 3: every scheduled handler is a kit job, and a tick's key is its scheduled time.

Both read the code's syntax tree, never its text: a comment or a string that mentions
`@job.handler` does not make a handler a job.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any, Final

from aws_lambda_powertools.exceptions import InvalidEnvelopeExpressionError
from aws_lambda_powertools.utilities.jmespath_utils import query

from clockless.tick import MalformedTickError, Tick, format_scheduled_time
from clockless_tools.architecture.code import (
    module_imports,
    qualified_name,
    string_constants,
    string_value,
)
from clockless_tools.architecture.project import KIT_PACKAGE, Project, Rule, SourceFile, Violation
from clockless_tools.template import Function, Schedule, TemplateError

SCHEDULED_BY_KIT: Final = "scheduled-by-kit"
TICK_IDENTITY: Final = "tick-identity"

_SCHEDULED_JOB = {f"{KIT_PACKAGE}.ScheduledJob", f"{KIT_PACKAGE}.job.ScheduledJob"}
_POWERTOOLS_IDEMPOTENCY = "aws_lambda_powertools.utilities.idempotency"
_SELF_KEYING = {"idempotent", "idempotent_function"}

SCHEDULED_TIME: Final = "<aws.scheduler.scheduled-time>"
SCHEDULE_ARN: Final = "<aws.scheduler.schedule-arn>"
EXECUTION_ID: Final = "<aws.scheduler.execution-id>"
ATTEMPT_NUMBER: Final = "<aws.scheduler.attempt-number>"

# What the scheduler would substitute: distinct values, so each can be traced into the key.
_SAMPLES: Final = {
    SCHEDULED_TIME: "2026-03-04T05:06:00Z",  # in the past: the kit refuses a tick from the future
    SCHEDULE_ARN: "arn:aws:scheduler:us-east-1:123456789012:schedule/default/architecture-rule-sample",
    EXECUTION_ID: "5ca1ab1e-0000-4000-8000-a5c4ed01e5e1",
    ATTEMPT_NUMBER: "7",
}
_PER_ATTEMPT = {_SAMPLES[EXECUTION_ID]: "the execution id", _SAMPLES[ATTEMPT_NUMBER]: "the attempt number"}


# ---------------------------------------------------------------------------------------------- rule 1
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

    binding = _last_binding(tree, attribute)
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
        target, value = _assignment(statement)
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
            continue
        if qualified_name(value.func, imports) not in _SCHEDULED_JOB:
            continue
        name_node = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "name"), None)
        yield _JobDeclaration(target.id, string_value(name_node, constants), statement.lineno)


def _assignment(statement: ast.stmt) -> tuple[ast.expr | None, ast.expr | None]:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        return statement.targets[0], statement.value
    if isinstance(statement, ast.AnnAssign):
        return statement.target, statement.value
    return None, None


def _last_binding(tree: ast.Module, name: str) -> ast.stmt | None:
    """The module-level statement that binds `name` last: the one Lambda finds."""
    found: ast.stmt | None = None
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and statement.name == name:
            found = statement
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in statement.names):
                found = statement
        else:
            target, _ = _assignment(statement)
            if isinstance(target, ast.Name) and target.id == name:
                found = statement
    return found


def _kit_wrapper(binding: ast.stmt, jobs: dict[str, _JobDeclaration]) -> _JobDeclaration | None:
    """The job whose `.handler` makes `binding` the Lambda handler, if any."""
    if isinstance(binding, ast.FunctionDef | ast.AsyncFunctionDef):
        candidates = binding.decorator_list
    else:
        _, value = _assignment(binding)
        candidates = [value.func] if isinstance(value, ast.Call) else []
    for candidate in candidates:
        if (
            isinstance(candidate, ast.Attribute)
            and candidate.attr == "handler"
            and isinstance(candidate.value, ast.Name)
            and candidate.value.id in jobs
        ):
            return jobs[candidate.value.id]
    return None


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


# ---------------------------------------------------------------------------------------------- rule 3
def check_tick_identity(project: Project) -> Iterator[Violation]:
    samples: list[dict[str, Any]] = []
    for logical_id, fn in project.template.scheduled_functions.items():
        for schedule in fn.schedules:
            sample = yield from _check_input(project, f"{logical_id}.Events.{schedule.event_id}", schedule)
            if sample is not None:
                samples.append(sample)
    if not project.template.scheduled_functions:
        return
    if not samples:
        samples = [
            {"job": "sample", "scheduled_time": _SAMPLES[SCHEDULED_TIME], "execution_id": _SAMPLES[EXECUTION_ID]}
        ]
    yield from _check_kit_key(project, samples)
    yield from _check_no_self_keying(project)


def _check_input(
    project: Project, resource: str, schedule: Schedule
) -> Generator[Violation, None, dict[str, Any] | None]:
    """Validate the Input; return it as the scheduler would deliver it, for tracing the key."""

    def violation(message: str, fix: str) -> Violation:
        return Violation(TICK_IDENTITY, project.template_file, resource, message, fix)

    text = schedule.input_text
    if text is None:
        yield violation(
            "schedule has no literal Input: the function would get the scheduler's default envelope, "
            "which carries no scheduled time",
            f'set Input to a JSON object with "scheduled_time": "{SCHEDULED_TIME}" '
            f'and "schedule_arn": "{SCHEDULE_ARN}"',
        )
        return None
    try:
        template_input = json.loads(text)
    except json.JSONDecodeError as error:
        yield violation(f"Input is not JSON: {error.msg} at column {error.colno}", "make Input one JSON object")
        return None
    if not isinstance(template_input, dict):
        yield violation("Input is not a JSON object", "make Input one JSON object")
        return None
    values = set(template_input.values())
    for placeholder, key in ((SCHEDULED_TIME, "scheduled_time"), (SCHEDULE_ARN, "schedule_arn")):
        if placeholder not in values:
            yield violation(
                f"Input does not carry {placeholder}: the tick cannot be identified by its schedule and time",
                f'add "{key}": "{placeholder}" to the Input',
            )
    for placeholder, sample in _SAMPLES.items():
        text = text.replace(placeholder, sample)
    delivered: dict[str, Any] = json.loads(text)
    try:
        tick = Tick.from_event(delivered, expected_job=str(delivered.get("job")))
    except MalformedTickError as error:
        yield violation(
            f"Input, as the scheduler fills it in, is not a tick: {error}",
            f'the kit reads "job", and "scheduled_time" filled with {SCHEDULED_TIME}',
        )
        return delivered
    if SCHEDULED_TIME in values and format_scheduled_time(tick.scheduled_time) != _SAMPLES[SCHEDULED_TIME]:
        yield violation(
            f"the tick's scheduled time does not come from {SCHEDULED_TIME}: every tick would share one key",
            f'set "scheduled_time": "{SCHEDULED_TIME}" in the Input',
        )
    if SCHEDULE_ARN in values and tick.schedule_arn != _SAMPLES[SCHEDULE_ARN]:
        yield violation(
            f"the tick's schedule ARN does not come from {SCHEDULE_ARN}",
            f'set "schedule_arn": "{SCHEDULE_ARN}" in the Input',
        )
    return delivered


def _check_kit_key(project: Project, samples: list[dict[str, Any]]) -> Iterator[Violation]:
    found = False
    for source in project.sources:
        imports = module_imports(source.tree)
        constants = string_constants(source.tree)
        for node in ast.walk(source.tree):
            if not isinstance(node, ast.Call):
                continue
            name = qualified_name(node.func, imports) or ""
            if not (name.startswith(_POWERTOOLS_IDEMPOTENCY) and name.endswith(".IdempotencyConfig")):
                continue
            found = True
            problem = _key_problem(node, constants, samples)
            if problem is not None:
                yield Violation(
                    TICK_IDENTITY,
                    source.relative,
                    source.owner,
                    problem,
                    'key on the tick only: event_key_jmespath="[job, scheduled_time]"',
                    line=node.lineno,
                )
    if not found:
        layers = sorted(project.layer_dirs)
        yield Violation(
            TICK_IDENTITY,
            project.template_file,
            layers[0] if layers else project.template_file,
            "no IdempotencyConfig anywhere in the kit or the functions: nothing deduplicates a tick",
            "the kit's ScheduledJob must claim each tick with Powertools idempotency keyed on (job, scheduled_time)",
        )


def _key_problem(call: ast.Call, constants: dict[str, str], samples: list[dict[str, Any]]) -> str | None:
    expression_node = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg == "event_key_jmespath":
            expression_node = keyword.value
    if expression_node is None:
        return "IdempotencyConfig has no event_key_jmespath: the key is the whole event, which changes per attempt"
    expression = string_value(expression_node, constants)
    if expression is None:
        return "event_key_jmespath is not a string literal or module constant: the key cannot be checked"
    if not expression.strip():
        return "event_key_jmespath is empty: the key is the whole event, which changes per attempt"
    return next(filter(None, (_traced_key_problem(expression, sample) for sample in samples)), None)


def _traced_key_problem(expression: str, sample: dict[str, Any]) -> str | None:
    """What is wrong with the key `expression` selects from a delivered Input, if anything."""
    try:
        selected = query(sample, expression)
    except InvalidEnvelopeExpressionError as error:
        return f"event_key_jmespath {expression!r} is not valid JMESPath: {error}"
    leaves = set(_leaves(selected))
    per_attempt = sorted(what for value, what in _PER_ATTEMPT.items() if value in leaves)
    if per_attempt:
        return (
            f"event_key_jmespath {expression!r} keys on {' and '.join(per_attempt)}, "
            "which change on every retry: each retry runs the tick again"
        )
    if selected == sample:
        return f"event_key_jmespath {expression!r} keys on the whole event"
    if _SAMPLES[SCHEDULED_TIME] not in leaves:
        return f"event_key_jmespath {expression!r} does not include the scheduled time: ticks would collide"
    return None


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _check_no_self_keying(project: Project) -> Iterator[Violation]:
    """A function that decorates with Powertools' idempotency itself bypasses the kit's key."""
    functions = project.template.functions
    for source in project.sources:
        if source.owner not in functions:
            continue
        imports = module_imports(source.tree)
        uses: set[tuple[int, str]] = set()
        for node in ast.walk(source.tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                uses.update((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
            elif isinstance(node, ast.Attribute):
                uses.add((node.lineno, qualified_name(node, imports) or ""))
        for line, name in sorted(uses):
            used = name.rsplit(".", 1)[-1]
            if name.startswith(_POWERTOOLS_IDEMPOTENCY) and used in _SELF_KEYING:
                yield Violation(
                    TICK_IDENTITY,
                    source.relative,
                    source.owner,
                    f"{source.module} uses Powertools {used} itself, with a key that is not the kit's "
                    "(job, scheduled time)",
                    "remove it: @job.handler already makes the handler idempotent on the tick",
                    line=line,
                )


SCHEDULED_BY_KIT_RULE = Rule(
    SCHEDULED_BY_KIT,
    "every scheduled function's handler is made a job by the kit (@job.handler, job = ScheduledJob(...))",
    check_scheduled_by_kit,
)
TICK_IDENTITY_RULE = Rule(
    TICK_IDENTITY,
    "Input carries the scheduled time and schedule ARN; the idempotency key is (job, scheduled time) only",
    check_tick_identity,
)
