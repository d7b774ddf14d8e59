"""trigger-targets: the HTTP trigger's JOB_FUNCTIONS and its invoke policy match the template's
scheduled jobs exactly; each drift planted in a copy is caught."""

from __future__ import annotations

import pytest

from clockless_tools.architecture.trigger_targets import TRIGGER_TARGETS
from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
TRIGGER = "  JobTriggerFunction:\n"
JOB_MAP = '{"window-generation": "${WindowGenerationFunction.Arn}", "session-cleanup": "${SessionCleanupFunction.Arn}"}'
INVOKE_RESOURCES = (
    "                - !GetAtt WindowGenerationFunction.Arn\n                - !GetAtt SessionCleanupFunction.Arn\n"
)


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        pytest.param(
            JOB_MAP,
            '{"window-generation": "${WindowGenerationFunction.Arn}"}',
            "lacks job 'session-cleanup'",
            id="job-missing",
        ),
        pytest.param(
            JOB_MAP,
            '{"window-generation": "${SessionCleanupFunction.Arn}", '
            '"session-cleanup": "${SessionCleanupFunction.Arn}"}',
            "sends job 'window-generation'",
            id="job-to-the-wrong-function",
        ),
        pytest.param(
            JOB_MAP,
            '{"window-generation": "${WindowGenerationFunction.Arn}", '
            '"session-cleanup": "${SessionCleanupFunction.Arn}", '
            '"nightly-report": "${SessionCleanupFunction.Arn}"}',
            "names job 'nightly-report', which no schedule",
            id="job-without-a-schedule",
        ),
        pytest.param(JOB_MAP, '{"window-generation": ', "is not a JSON object", id="not-json"),
        pytest.param(
            INVOKE_RESOURCES,
            "                - !GetAtt SessionCleanupFunction.Arn\n",
            "no policy statement allows lambda:InvokeFunction on WindowGenerationFunction",
            id="invoke-not-allowed",
        ),
        pytest.param(
            INVOKE_RESOURCES,
            INVOKE_RESOURCES + "                - !GetAtt JobTriggerFunction.Arn\n",
            "allowed on JobTriggerFunction, which runs no job",
            id="invoke-allowed-beyond-the-jobs",
        ),
    ],
)
def test_a_trigger_that_drifts_from_the_templates_jobs_is_caught(
    planted: PlantedCopy, old: str, new: str, complaint: str
) -> None:
    # Given the trigger's job map or invoke policy changed in a copy
    planted.replace(TEMPLATE, old, new, after=TRIGGER)

    # When trigger-targets checks it
    violations = planted.violations(TRIGGER_TARGETS)

    # Then the drift is named on the trigger function
    violation = found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing=complaint)
    assert violation.fix
