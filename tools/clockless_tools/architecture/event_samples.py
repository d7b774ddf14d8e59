"""Rule `event-samples`: the sample events and the `sam local invoke` env-vars file agree with the template.

A sample that drifts from the schedule's Input proves nothing when it is replayed, and an env-vars
entry that misses a table or queue variable sends a local run at a real table or queue.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from clockless.tick import MalformedTickError, Tick
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function

EVENT_SAMPLES: Final = "event-samples"

EVENTS_DIR: Final = "events"
ENV_VARS_FILE: Final = "env.local.json"
SAMPLES: Final = ("tick.json", "retry.json", "malformed.json")
ENDPOINT_VARIABLE: Final = "AWS_ENDPOINT_URL_DYNAMODB"
SQS_ENDPOINT_VARIABLE: Final = "AWS_ENDPOINT_URL_SQS"
# Hosts a container or a local process reaches the embedded DynamoDB on.
LOCAL_HOSTS: Final = {"localhost", "127.0.0.1", "::1", "host.docker.internal"}
# A top-level key of the env-vars file that applies to every function, not a function's entry.
_SAM_GLOBAL_KEY: Final = "Parameters"


def check_event_samples(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.scheduled_functions.items():
        yield from _check_samples(project, logical_id, fn)
    yield from _check_env_vars(project)


def _folder(project: Project, fn: Function) -> Path | None:
    code_dir = project.code_dir(fn)
    return None if code_dir is None else project.root / EVENTS_DIR / code_dir.name


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except OSError:
        return None, "is missing"
    except json.JSONDecodeError as error:
        return None, f"is not JSON ({error.msg} at line {error.lineno})"


def _check_samples(project: Project, logical_id: str, fn: Function) -> Iterator[Violation]:
    folder = _folder(project, fn)
    if folder is None:
        return
    inputs: list[tuple[str, set[str]]] = []
    for schedule in fn.schedules:
        try:
            template_input = schedule.input()
        except TemplateError:
            continue  # tick-identity reports an unreadable Input
        inputs.append((str(template_input.get("job")), set(template_input)))
    if not inputs:
        return
    parsed: dict[str, Tick] = {}
    for name in SAMPLES:
        path = folder / name
        relative = project.relative(path)

        def violation(message: str, fix: str, relative: str = relative) -> Violation:
            return Violation(EVENT_SAMPLES, relative, logical_id, message, fix)

        sample, problem = _read_json(path)
        if problem is not None:
            yield violation(
                f"{logical_id}'s sample {name} {problem}",
                f"write {relative}: the schedule's Input as the scheduler delivers it",
            )
            continue
        keys = set(sample) if isinstance(sample, dict) else set()
        # A malformed sample may lack a key (that can be its fault); no sample has a key the Input lacks.
        matching = [
            (job, input_keys)
            for job, input_keys in inputs
            if keys == input_keys or (name == "malformed.json" and keys <= input_keys)
        ]
        if not matching:
            job, input_keys = inputs[0]
            missing, extra = sorted(input_keys - keys), sorted(keys - input_keys)
            yield violation(
                f"{name}'s keys do not match the schedule's Input "
                f"(missing {missing or 'none'}, extra {extra or 'none'})",
                "give the sample exactly the Input's keys",
            )
            continue
        job = matching[0][0]
        try:
            parsed[name] = Tick.from_event(sample, expected_job=job)
        except MalformedTickError as error:
            if name != "malformed.json":
                yield violation(f"{name} is not a valid tick of job {job!r}: {error}", "make it a delivered tick")
        else:
            if name == "malformed.json":
                yield violation(
                    f"malformed.json parses as a valid tick of job {job!r}: it proves no rejection",
                    "give it one bad field (e.g. an unparsable scheduled_time)",
                )
    tick, retry = parsed.get("tick.json"), parsed.get("retry.json")
    if tick is not None and retry is not None and (retry.identity != tick.identity or retry.attempt < 2):
        yield Violation(
            EVENT_SAMPLES,
            project.relative(folder / "retry.json"),
            logical_id,
            "retry.json is not a redelivery of tick.json (same job and scheduled time, attempt 2 or more)",
            "copy tick.json with attempt >= 2 and a new execution_id",
        )


def _check_env_vars(project: Project) -> Iterator[Violation]:
    path = project.root / EVENTS_DIR / ENV_VARS_FILE
    relative = project.relative(path)
    functions = project.template.functions
    entries, problem = _read_json(path)
    if problem is not None or not isinstance(entries, dict):
        yield Violation(
            EVENT_SAMPLES,
            relative,
            project.template_file,
            f"the env-vars file for `sam local invoke --env-vars` {problem or 'is not a JSON object'}",
            f"write {relative} with one entry per function, pointing it at the local DynamoDB",
        )
        return
    for logical_id, fn in functions.items():
        entry = entries.get(logical_id)
        if not isinstance(entry, dict):
            yield Violation(
                EVENT_SAMPLES,
                relative,
                logical_id,
                f"{logical_id} has no entry: `sam local invoke` would use its deployed tables and endpoint",
                f'add "{logical_id}": {{"{ENDPOINT_VARIABLE}": "http://host.docker.internal:8765", ...}}',
            )
            continue
        # SAM applies the file's "Parameters" to every function, under the function's own entry.
        shared = entries.get(_SAM_GLOBAL_KEY)
        merged = {**shared, **entry} if isinstance(shared, dict) else entry
        yield from _check_entry(project, relative, logical_id, fn, merged)
    for name in sorted(set(entries) - set(functions) - {_SAM_GLOBAL_KEY}):
        yield Violation(
            EVENT_SAMPLES,
            relative,
            name,
            f"entry {name!r} names no function in the template",
            "remove it, or rename it to the function's logical id",
        )


def _check_entry(
    project: Project, relative: str, logical_id: str, fn: Function, entry: dict[str, Any]
) -> Iterator[Violation]:
    def violation(message: str, fix: str) -> Violation:
        return Violation(EVENT_SAMPLES, relative, logical_id, message, fix)

    environment = fn.environment
    for name in sorted(set(entry) - set(environment)):
        yield violation(
            f"{logical_id} does not declare {name}, so SAM ignores it",
            f"declare {name} in the function's (or Globals') Environment, or drop it here",
        )
    tables = set(project.template.resources_of_type("AWS::DynamoDB::Table"))
    table_variables = {name: value for name, value in environment.items() if project.referenced_ids(value) & tables}
    endpoint = entry.get(ENDPOINT_VARIABLE)
    if ENDPOINT_VARIABLE in environment:
        if not isinstance(endpoint, str) or urlsplit(endpoint).hostname not in LOCAL_HOSTS:
            yield violation(
                f"{ENDPOINT_VARIABLE} is {endpoint!r}, not a local endpoint: a local run could reach a real table",
                f'set "{ENDPOINT_VARIABLE}": "http://host.docker.internal:8765"',
            )
    elif table_variables:
        yield Violation(
            EVENT_SAMPLES,
            project.template_file,
            logical_id,
            f"{logical_id} uses tables but does not declare {ENDPOINT_VARIABLE}, "
            f"so {relative} cannot point it at the local DynamoDB",
            f'declare {ENDPOINT_VARIABLE}: "" in Globals (botocore ignores an empty value)',
        )
    yield from _check_queue_variables(project, relative, logical_id, environment, entry)
    for name, value in sorted(table_variables.items()):
        expected = _local_value(project, value)
        if name not in entry:
            yield violation(
                f"{name} (a table) is not overridden: `sam local invoke` would use the deployed table",
                f'add "{name}": "{expected or "<local table name>"}"',
            )
        elif expected is not None and entry[name] != expected:
            yield violation(
                f"{name} is {entry[name]!r}, but the local DynamoDB names that table {expected!r}",
                f'set "{name}": "{expected}"',
            )


def _check_queue_variables(
    project: Project, relative: str, logical_id: str, environment: dict[str, Any], entry: dict[str, Any]
) -> Iterator[Violation]:
    """A queue URL is the queue's identity, so a missed override sends a local run's messages to a real queue."""
    queues = set(project.template.resources_of_type("AWS::SQS::Queue"))
    queue_variables = {
        name: found.pop()
        for name, value in environment.items()
        if len(found := project.referenced_ids(value) & queues) == 1
    }
    if not queue_variables:
        return

    def violation(message: str, fix: str) -> Violation:
        return Violation(EVENT_SAMPLES, relative, logical_id, message, fix)

    if SQS_ENDPOINT_VARIABLE not in environment:
        yield Violation(
            EVENT_SAMPLES,
            project.template_file,
            logical_id,
            f"{logical_id} uses queues but does not declare {SQS_ENDPOINT_VARIABLE}, "
            f"so {relative} cannot point it at the local SQS",
            f'declare {SQS_ENDPOINT_VARIABLE}: "" in Globals (botocore ignores an empty value)',
        )
    elif not _is_local(entry.get(SQS_ENDPOINT_VARIABLE)):
        yield violation(
            f"{SQS_ENDPOINT_VARIABLE} is {entry.get(SQS_ENDPOINT_VARIABLE)!r}, not a local endpoint: a local run "
            "could reach a real queue",
            f'set "{SQS_ENDPOINT_VARIABLE}": "http://host.docker.internal:8765"',
        )
    names = LocalNames()
    for name, queue in sorted(queue_variables.items()):
        expected = f"http://host.docker.internal:8765/{names.account_id}/{names.queue_name(queue)}"
        value = entry.get(name)
        if not _is_local(value) or urlsplit(str(value)).path.rstrip("/").rsplit("/", 1)[-1] != names.queue_name(queue):
            yield violation(
                f"{name} (the queue {queue}) is {value!r}, not the local queue's URL: `sam local invoke` would "
                "send to the deployed queue",
                f'set "{name}": "{expected}"',
            )


def _is_local(url: Any) -> bool:
    return isinstance(url, str) and urlsplit(url).hostname in LOCAL_HOSTS


def _local_value(project: Project, value: Any) -> str | None:
    try:
        resolved = resolve(value, project.template, LocalNames())
    except TemplateError:
        return None
    return resolved if isinstance(resolved, str) else None


EVENT_SAMPLES_RULE = Rule(
    EVENT_SAMPLES,
    "events/<function>/ tick, retry and malformed samples match the Input; env.local.json covers every function",
    check_event_samples,
)
