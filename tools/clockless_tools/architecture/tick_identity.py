"""Rule `tick-identity`: the Input carries the scheduled time and schedule ARN, and the idempotency key
is (job, scheduled time) only, never the execution id or attempt number."""

from __future__ import annotations

import ast
import json
from collections.abc import Generator, Iterator
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
from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation, per_file
from clockless_tools.template.model import Schedule

TICK_IDENTITY: Final = "tick-identity"
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
    functions = project.template.functions
    for source in project.sources:
        if source.owner in functions:
            yield from _self_keying(source)


@per_file
def _self_keying(source: SourceFile) -> Iterator[Violation]:
    """A function that decorates with Powertools' idempotency itself bypasses the kit's key."""
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


TICK_IDENTITY_RULE = Rule(
    TICK_IDENTITY,
    "Input carries the scheduled time and schedule ARN; the idempotency key is (job, scheduled time) only",
    check_tick_identity,
)
