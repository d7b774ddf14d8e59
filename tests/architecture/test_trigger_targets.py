"""trigger-targets: the HTTP trigger's JOB_FUNCTIONS and its invoke policy match the template's
scheduled jobs exactly; each drift planted in a copy is caught.

The plants are built from the template's own jobs (whatever they are) and edit the trigger
resource as data, so a job added tomorrow changes nothing here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from clockless_tools.architecture.trigger_targets import JOB_MAP_VARIABLE, TRIGGER_TARGETS
from clockless_tools.template.model import Template
from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
TRIGGER = "JobTriggerFunction"
_TEMPLATE = Template.load()
JOBS = {job: _TEMPLATE.function_for_job(job).logical_id for job in _TEMPLATE.jobs}
FIRST_JOB, LAST_JOB = next(iter(JOBS)), list(JOBS)[-1]


def job_map(mapping: dict[str, str]) -> dict[str, Any]:
    """JOB_FUNCTIONS as the template writes it: a !Sub of job -> the function's ARN."""
    return {"Fn::Sub": json.dumps({job: f"${{{function_id}.Arn}}" for job, function_id in mapping.items()})}


def with_job_map(text: dict[str, Any] | str) -> Callable[[dict[str, Any]], None]:
    def edit(resource: dict[str, Any]) -> None:
        resource["Properties"]["Environment"]["Variables"][JOB_MAP_VARIABLE] = text

    return edit


def with_invoke_targets(function_ids: list[str]) -> Callable[[dict[str, Any]], None]:
    def edit(resource: dict[str, Any]) -> None:
        (statement,) = [
            statement
            for policy in resource["Properties"]["Policies"]
            if isinstance(policy, dict) and "Statement" in policy
            for statement in policy["Statement"]
            if statement.get("Sid") == "DeliverTicks"
        ]
        statement["Resource"] = [{"Fn::GetAtt": [function_id, "Arn"]} for function_id in function_ids]

    return edit


@pytest.mark.parametrize(
    ("edit", "complaint"),
    [
        pytest.param(
            with_job_map(job_map({job: fn for job, fn in JOBS.items() if job != LAST_JOB})),
            f"lacks job '{LAST_JOB}'",
            id="job-missing",
        ),
        pytest.param(
            with_job_map(job_map({**JOBS, FIRST_JOB: TRIGGER})),
            f"sends job '{FIRST_JOB}'",
            id="job-to-the-wrong-function",
        ),
        pytest.param(
            with_job_map(job_map({**JOBS, "nightly-report": JOBS[FIRST_JOB]})),
            "names job 'nightly-report', which no schedule",
            id="job-without-a-schedule",
        ),
        pytest.param(with_job_map(f'{{"{FIRST_JOB}": '), "is not a JSON object", id="not-json"),
        pytest.param(
            with_invoke_targets([fn for fn in JOBS.values() if fn != JOBS[FIRST_JOB]]),
            f"no policy statement allows lambda:InvokeFunction on {JOBS[FIRST_JOB]}",
            id="invoke-not-allowed",
        ),
        pytest.param(
            with_invoke_targets([*JOBS.values(), TRIGGER]),
            f"allowed on {TRIGGER}, which runs no job",
            id="invoke-allowed-beyond-the-jobs",
        ),
    ],
)
def test_a_trigger_that_drifts_from_the_templates_jobs_is_caught(
    planted: PlantedCopy, edit: Callable[[dict[str, Any]], None], complaint: str
) -> None:
    # Given the trigger's job map or invoke policy changed in a copy
    planted.edit_resource(TRIGGER, edit)

    # When trigger-targets checks it
    violations = planted.violations(TRIGGER_TARGETS)

    # Then the drift is named on the trigger function
    violation = found(violations, file=TEMPLATE, resource=TRIGGER, containing=complaint)
    assert violation.fix


def test_the_trigger_as_the_template_writes_it_passes(planted: PlantedCopy) -> None:
    # The same data edit with the template's own jobs is no violation: the plants above are the drift.
    planted.edit_resource(TRIGGER, with_job_map(job_map(JOBS)))
    planted.edit_resource(TRIGGER, with_invoke_targets(list(JOBS.values())))

    assert planted.violations(TRIGGER_TARGETS) == []
