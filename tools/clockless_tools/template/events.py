"""What EventBridge Scheduler delivers, built from a schedule's `Input` in template.yaml.

One code path for two users: `clockless events` writes (or checks) the sample payloads in
`events/`, and `clockless simulate` delivers exactly these payloads, so neither can drift from
the template.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from clockless.schedule.expressions import ScheduleExpressionError
from clockless.tick import format_scheduled_time
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Schedule, Template

SCHEDULED_TIME: Final = "aws.scheduler.scheduled-time"
SCHEDULE_ARN: Final = "aws.scheduler.schedule-arn"
ATTEMPT: Final = "aws.scheduler.attempt-number"
EXECUTION_ID: Final = "aws.scheduler.execution-id"
_PLACEHOLDER = re.compile(r"<(aws\.scheduler\.[a-z-]+)>")

# The sample ticks are the last tick of each schedule at or before this instant, so the files
# (and the tests that read them) stay put until the schedule itself changes.
SAMPLE_TICKS_AT: Final = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
SAMPLE_KINDS: Final = ("tick", "retry", "malformed")


def schedule_arn(schedule: Schedule, names: LocalNames = LocalNames()) -> str:
    """The ARN of the schedule SAM generates for this event (`<Function><Event>`, name left to
    CloudFormation because of `OmitName`), with a stable suffix in place of the random one."""
    name = _generated_name(f"{schedule.function_id}{schedule.event_id}", names)
    return f"arn:aws:scheduler:{names.region}:{names.account_id}:schedule/{schedule_group(schedule, names)}/{name}"


def schedule_group(schedule: Schedule, names: LocalNames = LocalNames()) -> str:
    """The schedule group the event's `GroupName` names: a literal, a `!Ref` to a group of the
    template (named by CloudFormation, so a stable stand-in here), or Scheduler's `default`."""
    group = schedule.properties.get("GroupName")
    if group is None:
        return "default"
    if isinstance(group, str):
        return group
    if isinstance(group, Mapping) and isinstance(group.get("Ref"), str):
        return _generated_name(group["Ref"], names)
    raise TemplateError(f"{schedule.function_id}.Events.{schedule.event_id}: GroupName must be a name or !Ref")


def _generated_name(logical_id: str, names: LocalNames) -> str:
    suffix = hashlib.sha256(logical_id.encode()).hexdigest()[:12].upper()
    return f"{names.stack_name}-{logical_id}-{suffix}"


def stable_uuid(*parts: object) -> str:
    """A version-4-shaped UUID derived from `parts`: what an execution id looks like, reproducibly."""
    digest = hashlib.sha256("/".join(str(part) for part in parts).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


@dataclass(frozen=True)
class Attempt:
    """The scheduler's context attributes for one attempted invocation."""

    scheduled_time: datetime
    schedule_arn: str
    attempt: int
    execution_id: str

    def value_of(self, placeholder: str) -> str:
        values = {
            SCHEDULED_TIME: format_scheduled_time(self.scheduled_time),
            SCHEDULE_ARN: self.schedule_arn,
            ATTEMPT: str(self.attempt),
            EXECUTION_ID: self.execution_id,
        }
        if placeholder not in values:
            raise TemplateError(f"Input uses <{placeholder}>, which EventBridge Scheduler does not substitute")
        return values[placeholder]


def render_input(schedule: Schedule, attempt: Attempt) -> dict[str, Any]:
    """The schedule's `Input` with the scheduler's placeholders substituted, as the target receives it."""

    def substitute(value: Any) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda match: attempt.value_of(match.group(1)), value)
        if isinstance(value, list):
            return [substitute(item) for item in value]
        if isinstance(value, Mapping):
            return {key: substitute(item) for key, item in value.items()}
        return value

    return substitute(schedule.input())  # type: ignore[no-any-return]


def _fields_holding(schedule: Schedule, placeholder: str) -> list[str]:
    return [key for key, value in schedule.input().items() if isinstance(value, str) and f"<{placeholder}>" in value]


def sample_events(schedule: Schedule, names: LocalNames = LocalNames()) -> dict[str, dict[str, Any]]:
    """tick: a real tick of the schedule at attempt 1; retry: the same tick at attempt 2 with a new
    execution id (a duplicate); malformed: the tick without its scheduled time."""
    spec = schedule.spec()  # a ScheduleDefinitionError names the function and event itself
    try:
        when = spec.previous_tick(SAMPLE_TICKS_AT)
    except ScheduleExpressionError as error:
        raise TemplateError(f"{schedule.function_id}.Events.{schedule.event_id}: {error}") from None
    if when is None:
        origin = f"{schedule.function_id}.Events.{schedule.event_id}"
        raise TemplateError(f"{origin}: the schedule has no tick at or before {SAMPLE_TICKS_AT:%Y-%m-%dT%H:%MZ}")
    arn = schedule_arn(schedule, names)
    origin = f"{schedule.function_id}.{schedule.event_id}"
    tick = render_input(schedule, Attempt(when, arn, 1, stable_uuid(origin, "tick")))
    retry = render_input(schedule, Attempt(when, arn, 2, stable_uuid(origin, "retry")))
    time_fields = _fields_holding(schedule, SCHEDULED_TIME)
    if not time_fields:
        raise TemplateError(f"{origin}: Input carries no <{SCHEDULED_TIME}>, so no tick can be told from another")
    malformed = render_input(schedule, Attempt(when, arn, 1, stable_uuid(origin, "malformed")))
    for field in time_fields:
        del malformed[field]
    return {"tick": tick, "retry": retry, "malformed": malformed}


def _render(event: Mapping[str, Any]) -> str:
    return json.dumps(event, indent=2) + "\n"


def expected_files(template: Template, events_dir: Path) -> dict[Path, dict[str, Any]]:
    """Every sample file `clockless events` owns, with its content: `<dir>/<function folder>/<kind>.json`,
    or `<Function>.<Event>.<kind>.json` where one folder serves several schedules."""
    by_folder: dict[Path, list[Schedule]] = {}
    for fn in template.scheduled_functions.values():
        by_folder.setdefault(events_dir / Path(fn.code_uri).name, []).extend(fn.schedules)
    files: dict[Path, dict[str, Any]] = {}
    for folder, schedules in by_folder.items():
        for schedule in schedules:
            prefix = f"{schedule.function_id}.{schedule.event_id}." if len(schedules) > 1 else ""
            for kind, event in sample_events(schedule).items():
                files[folder / f"{prefix}{kind}.json"] = event
    return files


def write_events(template: Template, events_dir: Path) -> list[Path]:
    """Write the sample files; returns those whose content changed."""
    changed = []
    for path, event in expected_files(template, events_dir).items():
        text = _render(event)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def check_events(template: Template, events_dir: Path) -> list[str]:
    """Drift between the sample files and the template, one line per problem naming file and key."""
    expected = expected_files(template, events_dir)
    problems = [problem for path, event in expected.items() for problem in _check_file(path, event, template)]
    # A folder of a function the template no longer has still holding samples is drift too.
    functions = {Path(fn.code_uri).name for fn in template.functions.values()}
    if events_dir.is_dir():
        for folder in sorted(p for p in events_dir.iterdir() if p.is_dir() and p.name not in functions):
            for kind in SAMPLE_KINDS:
                stray = folder / f"{kind}.json"
                if stray.exists():
                    problems.append(f"{_shown(stray, template)}: no function in the template has this folder")
    return sorted(problems)


def _check_file(path: Path, event: Mapping[str, Any], template: Template) -> list[str]:
    shown = _shown(path, template)
    if not path.exists():
        return [f"{shown}: missing (write it with `clockless events`)"]
    text = path.read_text(encoding="utf-8")
    try:
        actual = json.loads(text)
    except json.JSONDecodeError as error:
        return [f"{shown}: not valid JSON ({error.msg} at line {error.lineno})"]
    if not isinstance(actual, dict):
        return [f"{shown}: must hold a JSON object"]
    problems = [
        f"{shown}: key {key!r} is missing; the template gives {event[key]!r}" for key in event.keys() - actual.keys()
    ]
    problems += [
        f"{shown}: key {key!r} should not be there (the generated sample has none)"
        for key in actual.keys() - event.keys()
    ]
    problems += [
        f"{shown}: key {key!r} is {actual[key]!r}; the template gives {event[key]!r}"
        for key in event.keys() & actual.keys()
        if actual[key] != event[key]
    ]
    if not problems and text != _render(event):
        problems.append(f"{shown}: layout differs from `clockless events` output (key order or indentation)")
    return problems


def _shown(path: Path, template: Template) -> str:
    try:
        return str(path.relative_to(template.root))
    except ValueError:
        return str(path)
