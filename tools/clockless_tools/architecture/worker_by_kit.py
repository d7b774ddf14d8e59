"""Rule `worker-by-kit`: every function an event source mapping feeds is the kit's worker of a
scheduled job, wired to the queue that job's coordinator sends to.

A fanned-out tick is only exactly-once per item if the worker is the kit's (`work.worker(...)` of
a `FanOut` over the job's `ScheduledJob`): lease, cursor, conditional batch writes, finisher. And it
only finishes if the pieces are wired together: the worker declares which scheduled function it
works for (`Metadata: clockless: worker_of`), exactly one event source mapping feeds it, and the
coordinator's `WORK_QUEUE_URL` (where partitions go), the worker's `WORK_QUEUE_URL` (where
continuations go) and the mapping's queue are one queue. The environment the template gives both
is read by the kit's own settings (`clockless.fanout.settings`), so a value the kit would refuse at
its first invocation (a page size past its bound, a missing dead-letter queue URL) fails the build.

Like `scheduled-by-kit`, it reads the handler's syntax tree and never imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from clockless.config import ConfigurationError
from clockless.fanout.settings import CoordinatorSettings, WorkerSettings
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
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function
from clockless_tools.template.queues import resource_id

WORKER_BY_KIT: Final = "worker-by-kit"
WORK_QUEUE_VARIABLE: Final = "WORK_QUEUE_URL"

FAN_OUT: Final = {f"{KIT_PACKAGE}.FanOut", f"{KIT_PACKAGE}.fanout.FanOut"}
_SCHEDULED_JOB: Final = {f"{KIT_PACKAGE}.ScheduledJob", f"{KIT_PACKAGE}.job.ScheduledJob"}
_MAX_IMPORT_HOPS: Final = 5
_UNKNOWN: Final = "<not resolvable from the template>"


@dataclass(frozen=True, slots=True)
class _FanOutDeclaration:
    source: SourceFile
    variable: str
    job_name: str | None
    line: int


def check_worker_by_kit(project: Project) -> Iterator[Violation]:
    template = project.template
    for logical_id, fn in template.worker_functions.items():
        coordinator = template.scheduled_functions.get(fn.worker_of or "")
        if coordinator is None:
            yield _violation(
                project,
                logical_id,
                f"Metadata.clockless.worker_of is {fn.worker_of!r}, not a scheduled function of this template: "
                "nothing says whose ticks this worker applies",
                "Metadata: {clockless: {worker_of: <the scheduled function that fans out to it>}}",
            )
        yield from _check_wiring(project, logical_id, fn, coordinator)
        yield from _check_settings(project, logical_id, fn, WorkerSettings.from_env)
        if coordinator is not None:
            yield from _check_settings(project, coordinator.logical_id, coordinator, CoordinatorSettings.from_env)
        jobs = [schedule.job for schedule in coordinator.schedules] if coordinator is not None else []
        yield from _check_handler(project, logical_id, fn, jobs)


def _violation(project: Project, resource: str, message: str, fix: str) -> Violation:
    return Violation(WORKER_BY_KIT, project.template_file, resource, message, fix)


def _queue_variable(fn: Function) -> str | None:
    return resource_id(fn.environment.get(WORK_QUEUE_VARIABLE))


def _check_wiring(project: Project, logical_id: str, fn: Function, coordinator: Function | None) -> Iterator[Violation]:
    template = project.template
    mappings = [esm for esm in template.mappings_of(logical_id) if esm.source in template.queues]
    if len(mappings) != 1:
        yield _violation(
            project,
            logical_id,
            f"{len(mappings)} event source mappings feed it from a queue of this template: a worker reads exactly "
            "one work queue",
            f"one AWS::Lambda::EventSourceMapping with FunctionName: !Ref {logical_id} and "
            "EventSourceArn: !GetAtt <WorkQueue>.Arn",
        )
        return
    (mapping,) = mappings
    work_queue = mapping.source
    own = _queue_variable(fn)
    if own != work_queue:
        yield _violation(
            project,
            logical_id,
            f"its {WORK_QUEUE_VARIABLE} names {own!r}, but {mapping.logical_id} feeds it from {work_queue}: "
            "continuations would go where no worker reads",
            f"{WORK_QUEUE_VARIABLE}: !Ref {work_queue}",
        )
    if coordinator is not None:
        sent_to = _queue_variable(coordinator)
        if sent_to != work_queue:
            yield _violation(
                project,
                coordinator.logical_id,
                f"it sends partitions to {sent_to!r} ({WORK_QUEUE_VARIABLE}), but its worker {logical_id} reads "
                f"{work_queue}: the tick's partitions are never applied",
                f"{WORK_QUEUE_VARIABLE}: !Ref {work_queue} in {coordinator.logical_id}'s Environment",
            )


def _check_settings(
    project: Project, logical_id: str, fn: Function, read: Callable[[Mapping[str, str]], object]
) -> Iterator[Violation]:
    """The environment the template gives the function, read by the kit's own settings: what it would
    refuse at its first invocation is refused at build time."""
    environment: dict[str, str] = {}
    for name, value in fn.environment.items():
        try:
            resolved = resolve(value, project.template, LocalNames())
        except TemplateError:
            resolved = _UNKNOWN  # a parameter without a default, say: not this rule's to judge
        environment[name] = ",".join(resolved) if isinstance(resolved, list) else str(resolved)
    try:
        read(environment)
    except ConfigurationError as error:
        if _UNKNOWN not in str(error):
            yield _violation(
                project,
                logical_id,
                f"the kit would refuse its environment at the first invocation: {error}",
                "give the variable a value clockless.fanout.settings accepts, in the function's Environment",
            )


def _check_handler(project: Project, logical_id: str, fn: Function, jobs: list[str]) -> Iterator[Violation]:
    location = project.handler_location(fn)
    if location.path is None:
        yield Violation(
            WORKER_BY_KIT,
            project.template_file,
            logical_id,
            f"Handler {fn.handler!r} names no module under CodeUri {fn.prop('CodeUri')!r}",
            "point Handler at <package>.worker.lambda_handler inside the function's CodeUri",
        )
        return
    source = project.source(location.path)
    binding = last_binding(source.tree, location.attribute)
    if binding is None:
        yield Violation(
            WORKER_BY_KIT,
            source.relative,
            logical_id,
            f"{source.module} defines no {location.attribute!r}, which Handler {fn.handler!r} names",
            f"{location.attribute} = work.worker(<PartitionWork factory>) in {source.relative}",
        )
        return
    fan_out = _worker_of_fan_out(project, source, binding)
    if fan_out is None:
        yield Violation(
            WORKER_BY_KIT,
            source.relative,
            logical_id,
            f"handler {location.attribute} is not made by a {KIT_PACKAGE}.FanOut's .worker(...): a duplicate message "
            "or a redelivered batch applies its items again",
            f"{location.attribute} = work.worker(...), with work = FanOut(job, partitions=...) at module level",
            line=binding.lineno,
        )
        return
    if fan_out.job_name is None:
        yield Violation(
            WORKER_BY_KIT,
            fan_out.source.relative,
            logical_id,
            f"FanOut {fan_out.variable!r} is not over a ScheduledJob named by a literal, so its job cannot be "
            "matched to the coordinator's schedule",
            'work = FanOut(job, ...) with job = ScheduledJob("<job>") in the same module',
            line=fan_out.line,
        )
    elif jobs and fan_out.job_name not in jobs:
        yield Violation(
            WORKER_BY_KIT,
            fan_out.source.relative,
            logical_id,
            f"FanOut {fan_out.variable!r} works for job {fan_out.job_name!r}, but {fn.worker_of}'s schedule runs "
            f"{', '.join(repr(job) for job in jobs)}: the worker would apply another job's partitions",
            f"build the worker from the FanOut of {fn.worker_of}'s own ScheduledJob",
            line=fan_out.line,
        )


def _worker_of_fan_out(project: Project, source: SourceFile, binding: ast.stmt) -> _FanOutDeclaration | None:
    """The FanOut whose `.worker(...)` (call or decorator) makes `binding` the handler, if any."""
    for name in made_by(binding, "worker"):
        found = _fan_out_named(project, source, name)
        if found is not None:
            return found
    return None


def _fan_out_named(project: Project, source: SourceFile, name: str) -> _FanOutDeclaration | None:
    found = bound_call(project, source, name, FAN_OUT)
    if found is None:
        return None
    where, statement, call = found
    argument = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "job"), None)
    job_name = _job_name(project, where, argument.id) if isinstance(argument, ast.Name) else None
    return _FanOutDeclaration(where, name, job_name, statement.lineno)


def bound_call(
    project: Project, source: SourceFile, name: str, callables: set[str], depth: int = 0
) -> tuple[SourceFile, ast.stmt, ast.Call] | None:
    """The module-level `name = <one of callables>(...)` that `name` in `source` stands for: bound there, or
    imported (`from <module> import name`, absolute or relative) from a module of the same deployment."""
    if depth > _MAX_IMPORT_HOPS:
        return None
    tree = source.tree
    imports = module_imports(tree)
    for statement in tree.body:
        target, value = assignment(statement)
        if (
            isinstance(target, ast.Name)
            and target.id == name
            and isinstance(value, ast.Call)
            and qualified_name(value.func, imports) in callables
        ):
            return source, statement, value
    for statement in tree.body:
        if not isinstance(statement, ast.ImportFrom):
            continue
        for alias in statement.names:
            if (alias.asname or alias.name) != name:
                continue
            module = absolute_module(source.module, statement)
            other = project.module_file(module) if module else None
            if other is not None:
                return bound_call(project, other, alias.name, callables, depth + 1)
    return None


def absolute_module(current: str, statement: ast.ImportFrom) -> str | None:
    if statement.level == 0:
        return statement.module
    package = current.split(".")[: -statement.level]
    return ".".join([*package, *([statement.module] if statement.module else [])]) or None


def _job_name(project: Project, source: SourceFile, variable: str) -> str | None:
    """The name of the ScheduledJob `variable` stands for in `source`, if a literal or module constant says it."""
    found = bound_call(project, source, variable, _SCHEDULED_JOB)
    if found is None:
        return None
    where, _, call = found
    argument = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
    return string_value(argument, string_constants(where.tree))


WORKER_BY_KIT_RULE = Rule(
    WORKER_BY_KIT,
    "every function an event source mapping feeds is a kit worker (work.worker of a FanOut over its job), "
    "declares worker_of, reads the queue its coordinator's WORK_QUEUE_URL sends to, and both have an environment "
    "the kit's settings accept",
    check_worker_by_kit,
)
