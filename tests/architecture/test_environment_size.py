"""Rule `environment-size`: planted environments over Lambda's 4 KB (many jobs' schedules, a big
variable in Globals, quotes measured escaped, a longer stack name), each caught; one that cannot be
sized is reported, and the limit is exact."""

from __future__ import annotations

import json
from typing import Any

from clockless_tools.architecture import Project
from clockless_tools.architecture.environment_size import (
    LIMIT_BYTES,
    STACK_NAME_MAX,
    deployed_stack_name_max,
    environment_size,
)
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.model import Template
from tests.architecture.planting import PlantedCopy, found
from tests.jobs import jobs

RULE = "environment-size"
TEMPLATE = "template.yaml"
TRIGGER = "JobTriggerFunction"
FIRST = jobs()[0]


def _size(planted: PlantedCopy, function_id: str) -> int:
    project = Project.at(planted.root)
    template = Template.load(planted.root / TEMPLATE)
    stack_name_max = deployed_stack_name_max(project)
    return environment_size(template, template.function(function_id), stack_name_max=stack_name_max).total


def _set_variable(planted: PlantedCopy, function_id: str, name: str, value: Any) -> None:
    def edit(resource: dict[str, Any]) -> None:
        resource["Properties"]["Environment"]["Variables"][name] = value

    planted.edit_resource(function_id, edit)


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations(RULE) == []


def test_many_jobs_schedules_overflow_the_trigger(planted: PlantedCopy) -> None:
    # Given the trigger's schedules for 30 more jobs, as `clockless new job` would add them
    template = Template.load(planted.root / TEMPLATE)
    # (a !Sub once a job's LocalTime and zones come from the Jobs map: resolved as the rule reads it)
    schedules = json.loads(
        str(resolve(template.function(TRIGGER).own_environment["JOB_SCHEDULES"], template, LocalNames()))
    )
    schedules.update(
        {
            f"extra-job-{n:02d}": {"ScheduleExpression": "cron(0/15 * * * ? *)", "ScheduleExpressionTimezone": "UTC"}
            for n in range(30)
        }
    )
    _set_variable(planted, TRIGGER, "JOB_SCHEDULES", json.dumps(schedules))

    violation = found(planted.violations(RULE), file=TEMPLATE, resource=TRIGGER, containing="over Lambda's 4,096")

    assert "the biggest: JOB_SCHEDULES" in violation.message
    assert violation.fix.startswith("shrink it by ")


def test_a_big_variable_in_globals_overflows_every_function(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "        POWERTOOLS_METRICS_NAMESPACE: Clockless\n",
        "        POWERTOOLS_METRICS_NAMESPACE: Clockless\n        FEATURE_FLAGS: " + "f" * 3500 + "\n",
    )

    violations = planted.violations(RULE)

    for function_id in Template.load(planted.root / TEMPLATE).functions:
        found(violations, file=TEMPLATE, resource=function_id, containing="the biggest: FEATURE_FLAGS 3,519")


def test_quotes_are_measured_escaped(planted: PlantedCopy) -> None:
    # Given a value that fits as raw text and not as the JSON Lambda measures (each quote is \")
    room = LIMIT_BYTES - _size(planted, f"{FIRST.stem}Function") - len('"QUOTED":"",')
    _set_variable(planted, f"{FIRST.stem}Function", "QUOTED", '"' * (room // 2 + 1))

    found(planted.violations(RULE), file=TEMPLATE, resource=f"{FIRST.stem}Function", containing="over Lambda's")


def test_the_limit_is_exact(planted: PlantedCopy) -> None:
    function_id = f"{FIRST.stem}Function"
    room = LIMIT_BYTES - _size(planted, function_id) - len(',"PADDING":""')
    _set_variable(planted, function_id, "PADDING", "p" * room)
    assert planted.violations(RULE) == []

    _set_variable(planted, function_id, "PADDING", "p" * (room + 1))
    found(planted.violations(RULE), file=TEMPLATE, resource=function_id, containing="4,097 bytes")


def test_a_longer_stack_name_lengthens_every_generated_name(planted: PlantedCopy) -> None:
    assert deployed_stack_name_max(Project.at(planted.root)) == len("clockless-prod")
    before = _size(planted, TRIGGER)

    planted.replace(
        "samconfig.toml",
        'stack_name = "clockless-prod"\n',
        f'stack_name = "{"s" * 100}"\n',
        after="[prod.deploy.parameters]\n",
    )
    # Every name CloudFormation generates starts with the stack's name: the trigger's 5 tables and its
    # secret are that much longer (its 2 functions' ARNs too, up to a function name's 64 characters)
    assert deployed_stack_name_max(Project.at(planted.root)) == 100
    assert _size(planted, TRIGGER) - before >= 6 * (100 - len("clockless-prod"))

    planted.delete("samconfig.toml")
    assert deployed_stack_name_max(Project.at(planted.root)) == STACK_NAME_MAX


def test_a_value_it_cannot_bound_is_reported(planted: PlantedCopy) -> None:
    _set_variable(planted, TRIGGER, "SHARED_TOPIC_ARN", {"Fn::ImportValue": "shared-topic-arn"})

    violation = found(planted.violations(RULE), file=TEMPLATE, resource=TRIGGER, containing="cannot be sized")

    assert "SHARED_TOPIC_ARN: Fn::ImportValue is not an intrinsic the rule can bound" in violation.message
