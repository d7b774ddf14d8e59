"""Rule `tick-identity`: planted violations of the tick's identity and key, each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"


CLEANUP_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


KIT_JOB = "layers/clockless/clockless/job.py"


# ---------------------------------------------------------------------------------------------- tick-identity
INPUT_TIME = '"scheduled_time": "<aws.scheduler.scheduled-time>",'


INPUT_ARN = '"schedule_arn": "<aws.scheduler.schedule-arn>",'


@pytest.mark.parametrize(
    ("carried", "placeholder"),
    [(INPUT_TIME, "<aws.scheduler.scheduled-time>"), (INPUT_ARN, "<aws.scheduler.schedule-arn>")],
    ids=["scheduled-time", "schedule-arn"],
)
def test_an_input_without_the_ticks_identity_is_caught(planted: PlantedCopy, carried: str, placeholder: str) -> None:
    # Given the hourly schedule's Input without one of the tick's identity fields
    planted.replace(TEMPLATE, carried, "", after=CLEANUP)

    violations = planted.violations("tick-identity")

    found(
        violations,
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}Function.Events.Schedule",
        containing=f"does not carry {placeholder}",
    )


def test_a_scheduled_time_filled_from_the_execution_id_is_caught(planted: PlantedCopy) -> None:
    # Given an Input whose scheduled_time is the per-attempt execution id
    planted.replace(
        TEMPLATE,
        INPUT_TIME,
        '"scheduled_time": "<aws.scheduler.execution-id>", "at": "<aws.scheduler.scheduled-time>",',
        after=CLEANUP,
    )

    violations = planted.violations("tick-identity")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function.Events.Schedule", containing="is not a tick")


@pytest.mark.parametrize(
    ("key", "complaint"),
    [
        ('"[job, execution_id]"', "execution id"),
        ('"[job, attempt, scheduled_time]"', "attempt number"),
        ('"@"', "execution id"),
        ('"job"', "does not include the scheduled time"),
    ],
)
def test_a_kit_keyed_on_anything_but_job_and_scheduled_time_is_caught(
    planted: PlantedCopy, key: str, complaint: str
) -> None:
    # Given the kit's idempotency key changed
    planted.replace(
        KIT_JOB, 'IDEMPOTENCY_KEY_JMESPATH: Final = "[job, scheduled_time]"', f"IDEMPOTENCY_KEY_JMESPATH: Final = {key}"
    )

    violations = planted.violations("tick-identity")

    # Then the rule reports the kit's IdempotencyConfig, in the layer that ships it
    violation = found(violations, file=KIT_JOB, resource="ClocklessLayer", containing=complaint)
    assert "IdempotencyConfig(" in (planted.root / KIT_JOB).read_text().splitlines()[violation.line - 1]  # type: ignore[operator]


def test_a_kit_config_without_a_key_expression_is_caught(planted: PlantedCopy) -> None:
    planted.replace(KIT_JOB, "event_key_jmespath=IDEMPOTENCY_KEY_JMESPATH,", "")

    violations = planted.violations("tick-identity")

    found(violations, file=KIT_JOB, resource="ClocklessLayer", containing="whole event")


def test_a_function_keying_idempotency_itself_is_caught(planted: PlantedCopy) -> None:
    planted.append(
        CLEANUP_HANDLER,
        "\nfrom aws_lambda_powertools.utilities.idempotency import idempotent_function  # noqa: E402\n",
    )

    violations = planted.violations("tick-identity")

    found(violations, file=CLEANUP_HANDLER, resource=f"{HOURLY_JOB.stem}Function", containing="idempotent_function")
