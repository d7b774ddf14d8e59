"""trigger-schedules: the HTTP trigger's JOB_SCHEDULES gives each scheduled job the expression, zone
and bounds its ScheduleV2 event declares; each drift planted in a copy is caught.

The plants are built from the template's own jobs and schedules (whatever they are) and edit the
resources as data, so a job added tomorrow changes nothing here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from clockless_tools.architecture.trigger_schedules import SCHEDULES_VARIABLE, TRIGGER_SCHEDULES
from clockless_tools.template.loader import load_yaml
from clockless_tools.template.model import OPERATING_ZONES_KEY, Schedule, Template
from clockless_tools.template.render import render
from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
TRIGGER = "JobTriggerFunction"
_TEMPLATE = Template.load()


def _zones(schedule: Schedule) -> str:
    zones: Any = schedule.declared.get(OPERATING_ZONES_KEY)
    if isinstance(zones, dict) and set(zones) == {"Ref"}:
        zones = _TEMPLATE.parameter_default(str(zones["Ref"]))
    return ",".join(zones) if isinstance(zones, list) else str(zones)


# Each job's tick-placing properties as its schedule declares them (literal in this template), and a
# LocalTime job's declaration and zones, which the trigger copies too.
SCHEDULES = {
    job: {name: schedule.properties[name] for name in ("ScheduleExpression", "ScheduleExpressionTimezone")}
    | (
        {}
        if schedule.local_time is None
        else {"LocalTime": schedule.local_time, "OperatingTimeZones": _zones(schedule)}
    )
    for job, schedule in _TEMPLATE.jobs.items()
}
FIRST_JOB, LAST_JOB = next(iter(SCHEDULES)), list(SCHEDULES)[-1]
FIRST_FUNCTION = _TEMPLATE.function_for_job(FIRST_JOB).logical_id
ANCHOR = "2027-01-01T00:00:00Z"


def with_schedules(value: Any) -> Callable[[dict[str, Any]], None]:
    """The trigger's JOB_SCHEDULES set to `value`: text or an intrinsic as it is, schedules as their
    JSON, None removes the variable."""

    def edit(resource: dict[str, Any]) -> None:
        variables = resource["Properties"]["Environment"]["Variables"]
        if value is None:
            del variables[SCHEDULES_VARIABLE]
        elif isinstance(value, str) or "Fn::Sub" in value:
            variables[SCHEDULES_VARIABLE] = value
        else:
            variables[SCHEDULES_VARIABLE] = json.dumps(value)

    return edit


def changed(job: str, **properties: Any) -> dict[str, Any]:
    """The template's schedules with `job`'s properties changed (None removes one)."""
    schedules = {name: dict(values) for name, values in SCHEDULES.items()}
    schedules[job].update(properties)
    schedules[job] = {name: value for name, value in schedules[job].items() if value is not None}
    return schedules


@pytest.mark.parametrize(
    ("edit", "complaint"),
    [
        pytest.param(with_schedules(None), f"{SCHEDULES_VARIABLE} is not set", id="not-set"),
        pytest.param(
            with_schedules(changed(FIRST_JOB, ScheduleExpression="cron(30 * * * ? *)")),
            f"{SCHEDULES_VARIABLE}['{FIRST_JOB}'].ScheduleExpression is 'cron(30 * * * ? *)'",
            id="another-expression",
        ),
        pytest.param(
            with_schedules(changed(FIRST_JOB, ScheduleExpressionTimezone="Europe/Paris")),
            "ScheduleExpressionTimezone is 'Europe/Paris'",
            id="another-zone",
        ),
        pytest.param(
            with_schedules(changed(FIRST_JOB, StartDate=ANCHOR)),
            f"StartDate is '{ANCHOR}', but {FIRST_FUNCTION}.Events.Schedule declares not set",
            id="a-bound-the-schedule-lacks",
        ),
        pytest.param(
            with_schedules(changed(FIRST_JOB, Input="{}")),
            "has 'Input', which does not place ticks",
            id="a-property-that-places-no-tick",
        ),
        pytest.param(
            with_schedules({job: values for job, values in SCHEDULES.items() if job != LAST_JOB}),
            f"lacks job '{LAST_JOB}'",
            id="job-missing",
        ),
        pytest.param(
            with_schedules({**SCHEDULES, "nightly-report": SCHEDULES[FIRST_JOB]}),
            "names job 'nightly-report', which no schedule",
            id="job-without-a-schedule",
        ),
        pytest.param(with_schedules(f'{{"{FIRST_JOB}": '), "is not a JSON object", id="not-json"),
    ],
)
def test_a_trigger_whose_schedules_drift_from_the_templates_is_caught(
    planted: PlantedCopy, edit: Callable[[dict[str, Any]], None], complaint: str
) -> None:
    # Given the trigger's copy of the schedules changed in a copy of the project
    planted.edit_resource(TRIGGER, edit)

    # When trigger-schedules checks it
    violations = planted.violations(TRIGGER_SCHEDULES)

    # Then the drift is named on the trigger function, with a fix
    violation = found(violations, file=TEMPLATE, resource=TRIGGER, containing=complaint)
    assert violation.fix


def test_a_parameters_default_written_out_where_the_schedule_refers_to_it_is_caught(planted: PlantedCopy) -> None:
    # Given the first job's schedule anchored on a parameter (as a rate() job's StartDate is), and
    # the trigger given the parameter's default as a literal: equal today, apart after a deploy
    # that passes the parameter another value
    path = planted.root / TEMPLATE
    document = load_yaml(path.read_text(encoding="utf-8"))
    document["Parameters"]["FirstJobStartDate"] = {"Type": "String", "Default": ANCHOR}
    schedule = document["Resources"][FIRST_FUNCTION]["Properties"]["Events"]["Schedule"]["Properties"]
    schedule["StartDate"] = {"Ref": "FirstJobStartDate"}
    path.write_text(render(document), encoding="utf-8")
    planted.edit_resource(TRIGGER, with_schedules(changed(FIRST_JOB, StartDate=ANCHOR)))

    violations = planted.violations(TRIGGER_SCHEDULES)

    found(violations, file=TEMPLATE, resource=TRIGGER, containing="declares '<parameter FirstJobStartDate>'")

    # And the reference itself, through !Sub, is what the rule asks for
    reference = {
        "Fn::Sub": [
            json.dumps(changed(FIRST_JOB, StartDate="${Anchor}")),
            {"Anchor": {"Ref": "FirstJobStartDate"}},
        ]
    }
    planted.edit_resource(TRIGGER, with_schedules(reference))
    assert planted.violations(TRIGGER_SCHEDULES) == []


def test_the_trigger_as_the_template_writes_it_passes(planted: PlantedCopy) -> None:
    # The same data edit with the template's own schedules is no violation: the plants above are the drift.
    planted.edit_resource(TRIGGER, with_schedules(SCHEDULES))

    assert planted.violations(TRIGGER_SCHEDULES) == []
