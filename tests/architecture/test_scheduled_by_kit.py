"""Rule `scheduled-by-kit`: planted violations, each caught; text that only mentions the kit is not."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


CLEANUP_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


# ---------------------------------------------------------------------------------------------- scheduled-by-kit
def test_a_scheduled_handler_without_the_kit_is_caught(planted: PlantedCopy) -> None:
    # Given the cleanup handler no longer decorated with @job.handler
    planted.replace(CLEANUP_HANDLER, "@job.handler\n", "")

    # When scheduled-by-kit checks the copy
    violations = planted.violations("scheduled-by-kit")

    # Then it names the handler module and the function, at the handler's line
    violation = found(
        violations, file=CLEANUP_HANDLER, resource=f"{HOURLY_JOB.stem}Function", containing="not decorated"
    )
    assert violation.line is not None
    assert "def lambda_handler" in (planted.root / CLEANUP_HANDLER).read_text().splitlines()[violation.line - 1]


def test_a_comment_or_string_mentioning_the_decorator_does_not_satisfy_the_rule(planted: PlantedCopy) -> None:
    # Given a handler that only talks about @job.handler
    planted.replace(CLEANUP_HANDLER, "@job.handler\n", '# @job.handler\nNOTE = "@job.handler"\n')

    violations = planted.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource=f"{HOURLY_JOB.stem}Function", containing="not a scheduled job")


def test_a_handler_module_that_never_creates_a_scheduled_job_is_caught(planted: PlantedCopy) -> None:
    # Given a plain Lambda handler whose docstring claims the kit
    planted.write(
        CLEANUP_HANDLER,
        '"""Uses @job.handler from clockless (it does not)."""\n\n'
        "from typing import Any\n\n\n"
        "def lambda_handler(event: Any, context: Any) -> dict[str, str]:\n"
        '    return {"ok": "yes"}\n',
    )

    violations = planted.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource=f"{HOURLY_JOB.stem}Function", containing="creates no clockless")


def test_a_decorated_handler_rebound_to_an_undecorated_one_is_caught(planted: PlantedCopy) -> None:
    # Lambda finds the last binding of the name, so that is the one that must be the job.
    planted.append(
        CLEANUP_HANDLER, "\n\ndef lambda_handler(event: object, context: object) -> None:  # noqa: F811\n    pass\n"
    )

    violations = planted.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource=f"{HOURLY_JOB.stem}Function", containing="not a scheduled job")


def test_a_job_named_differently_from_its_schedule_is_caught(planted: PlantedCopy) -> None:
    planted.replace(CLEANUP_HANDLER, f'JOB_NAME = "{HOURLY_JOB.name}"', 'JOB_NAME = "sessions-cleanup"')

    violations = planted.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource=f"{HOURLY_JOB.stem}Function", containing="'sessions-cleanup'")


def test_a_handler_setting_that_names_no_module_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"Handler: {HOURLY_JOB.package}.handler.lambda_handler",
        f"Handler: {HOURLY_JOB.package}.handlers.lambda_handler",
        resource=f"{HOURLY_JOB.stem}Function",
    )

    violations = planted.violations("scheduled-by-kit")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="names no module")
