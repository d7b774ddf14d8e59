"""Rule `trigger-schedules`: the HTTP trigger places each job's ticks with the schedule that job's
ScheduleV2 event declares.

A trigger (a function that reads `JOB_FUNCTIONS`) refuses an instant that is not one of the job's
scheduled times, reading each job's schedule from `JOB_SCHEDULES`, written in template.yaml as the
schedule's own properties (`ScheduleExpression`, `ScheduleExpressionTimezone`, `StartDate`,
`EndDate`; for a job with a local time, `LocalTime` and its `OperatingTimeZones` joined by
commas, from its Metadata, so the trigger keeps of the job's cron only the instants that are that
time somewhere). A copy that drifts from the schedule (another expression, zone or bound, a job
left out, a parameter's default written out where the schedule refers to the parameter) would
refuse the job's real ticks or let other instants through as ticks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import OPERATING_ZONES_KEY, Function, Schedule, Template

TRIGGER_SCHEDULES: Final = "trigger-schedules"
JOB_MAP_VARIABLE: Final = "JOB_FUNCTIONS"
SCHEDULES_VARIABLE: Final = "JOB_SCHEDULES"
# What places a schedule's ticks; Scheduler evaluates a schedule without a zone in UTC.
SCHEDULE_PROPERTIES: Final = ("ScheduleExpression", "ScheduleExpressionTimezone", "StartDate", "EndDate")
# A job with a local time (Metadata local_time, in its operating_time_zones joined by commas): which
# of its cron's instants are ticks.
LOCAL_TIME_PROPERTIES: Final = ("LocalTime", "OperatingTimeZones")
PLACING: Final = (*SCHEDULE_PROPERTIES, *LOCAL_TIME_PROPERTIES)
_DEFAULTS: Final = {"ScheduleExpressionTimezone": "UTC"}
_FIX: Final = (
    'write it as !Sub [\'{"<job>": {"ScheduleExpression": "${<Id>}", "ScheduleExpressionTimezone": "UTC"}, ...}\', '
    "{<Id>: !FindInMap [Jobs, <Id>, Schedule], ...}], one entry per scheduled job, with the schedule's own values"
)


def check_trigger_schedules(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.functions.items():
        if JOB_MAP_VARIABLE in fn.environment:
            yield from _check_trigger(project, logical_id, fn)


def _check_trigger(project: Project, logical_id: str, fn: Function) -> Iterator[Violation]:
    def violation(message: str, fix: str = _FIX) -> Violation:
        return Violation(TRIGGER_SCHEDULES, project.template_file, logical_id, message, fix)

    template = project.template
    if SCHEDULES_VARIABLE not in fn.environment:
        yield violation(
            f"{SCHEDULES_VARIABLE} is not set: the trigger cannot tell a job's ticks from other instants and "
            "would run any minute"
        )
        return
    # Each parameter resolved to a marker naming it, so a value written out where the schedule
    # refers to a parameter (which a deploy overrides) differs from that reference.
    marked = _with_parameter_markers(template)
    try:
        mapped = json.loads(str(resolve(fn.environment[SCHEDULES_VARIABLE], marked, LocalNames())))
    except (TemplateError, json.JSONDecodeError) as error:
        yield violation(f"{SCHEDULES_VARIABLE} is not a JSON object of job -> schedule properties: {error}")
        return
    if not isinstance(mapped, Mapping):
        yield violation(f"{SCHEDULES_VARIABLE} is not a JSON object of job -> schedule properties")
        return
    for job, schedule in sorted(template.jobs.items()):
        where = f"{schedule.function_id}.Events.{schedule.event_id}"
        if job not in mapped:
            yield violation(
                f"{SCHEDULES_VARIABLE} lacks job {job!r}: the trigger would fail to start (its settings need every "
                f"job of {JOB_MAP_VARIABLE})",
                f'add "{job}" with the properties of {where}',
            )
            continue
        yield from (
            violation(message, f"copy {where}'s value (a !Ref stays a reference, in !Sub as ${{Parameter}})")
            for message in _drift(job, mapped[job], _declared(schedule, marked), where)
        )
    for job in sorted(set(mapped) - set(template.jobs)):
        yield violation(
            f"{SCHEDULES_VARIABLE} names job {job!r}, which no schedule in the template runs",
            f"remove {job!r}",
        )


def _drift(job: str, given: Any, declared: Mapping[str, str], where: str) -> Iterator[str]:
    """What differs between the trigger's copy of a job's schedule and its declaration."""
    if not isinstance(given, Mapping):
        yield f"{SCHEDULES_VARIABLE}[{job!r}] is not an object of {', '.join(PLACING)}"
        return
    for name in sorted(set(given) - set(PLACING)):
        yield (f"{SCHEDULES_VARIABLE}[{job!r}] has {name!r}, which does not place ticks (only {', '.join(PLACING)})")
    for name in PLACING:
        value = given.get(name, _DEFAULTS.get(name))
        value = None if value is None else str(value)
        if value != declared.get(name):
            yield (
                f"{SCHEDULES_VARIABLE}[{job!r}].{name} is {_shown(value)}, but {where} declares "
                f"{_shown(declared.get(name))}: the trigger would place the job's ticks elsewhere"
            )


def _declared(schedule: Schedule, template: Template) -> dict[str, str]:
    """The schedule's tick-placing properties, resolved as the trigger's copy is."""
    declared: dict[str, str] = {}
    for name in SCHEDULE_PROPERTIES:
        value = schedule.properties.get(name, _DEFAULTS.get(name))
        if value is not None:
            declared[name] = str(resolve(value, template, LocalNames()))
    if schedule.local_time is not None:
        declared["LocalTime"] = schedule.local_time
        zones = resolve(schedule.declared.get(OPERATING_ZONES_KEY), template, LocalNames())
        declared["OperatingTimeZones"] = ",".join(zones) if isinstance(zones, list) else str(zones)
    return declared


def _with_parameter_markers(template: Template) -> Template:
    parameters = {
        name: {**declaration, "Type": "String", "Default": f"<parameter {name}>"}
        for name, declaration in (template.document.get("Parameters") or {}).items()
    }
    return Template(path=template.path, document={**template.document, "Parameters": parameters})


def _shown(value: str | None) -> str:
    return "not set" if value is None else repr(value)


TRIGGER_SCHEDULES_RULE = Rule(
    TRIGGER_SCHEDULES,
    "a trigger's JOB_SCHEDULES gives every scheduled job the expression, zone and bounds its ScheduleV2 event declares",
    check_trigger_schedules,
)
