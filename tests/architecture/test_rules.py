"""The architecture rules hold on the project, and each one catches a violation planted in a copy.

This file: the whole project, reporting, and the rules about jobs and their key
(scheduled-by-kit, tick-identity). The other rules' plants are in test_rules_*.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clockless_tools.architecture import RULES, Project, check
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy, found

TEMPLATE = "template.yaml"
CLEANUP = "  SessionCleanupFunction:\n"
CLEANUP_HANDLER = "functions/session_cleanup/session_cleanup/handler.py"
CLEANUP_LOGIC = "functions/session_cleanup/session_cleanup/logic.py"
KIT_JOB = "layers/clockless/clockless/job.py"


@pytest.mark.parametrize("rule", [r.name for r in RULES])
def test_the_project_keeps_every_rule(rule: str) -> None:
    # Given the project as it is
    project = Project.at(PROJECT_ROOT)

    # When one rule checks it
    violations = check(project, [r for r in RULES if r.name == rule])

    # Then it finds nothing
    assert violations == []


def test_an_untouched_copy_keeps_every_rule(tmp_path: Path) -> None:
    # The plants below are only meaningful if the copy itself is clean.
    assert check(PlantedCopy.of_project(tmp_path).project) == []


def test_violations_of_different_rules_are_reported_together_each_with_a_fix(tmp_path: Path) -> None:
    # Given a copy with three unrelated violations
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, "ScheduleExpressionTimezone: UTC", "ScheduleExpressionTimezone: Europe/Paris", after=CLEANUP)
    copy.replace(CLEANUP_HANDLER, "@job.handler\n", "")
    copy.append(CLEANUP_LOGIC, "\nimport sched\n")

    # When every rule checks it
    violations = check(copy.project)

    # Then all three are reported at once, each with a one-line fix (a zone other than UTC also
    # breaks the time-zone linter's rule)
    assert {v.rule for v in violations} == {"schedule-delivery", "scheduled-by-kit", "no-clock-in-app", "local-time"}
    assert all(v.fix and "\n" not in v.fix and "\n" not in v.message for v in violations)


# ---------------------------------------------------------------------------------------------- scheduled-by-kit
def test_a_scheduled_handler_without_the_kit_is_caught(tmp_path: Path) -> None:
    # Given the cleanup handler no longer decorated with @job.handler
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(CLEANUP_HANDLER, "@job.handler\n", "")

    # When scheduled-by-kit checks the copy
    violations = copy.violations("scheduled-by-kit")

    # Then it names the handler module and the function, at the handler's line
    violation = found(violations, file=CLEANUP_HANDLER, resource="SessionCleanupFunction", containing="not decorated")
    assert violation.line is not None
    assert "def lambda_handler" in (copy.root / CLEANUP_HANDLER).read_text().splitlines()[violation.line - 1]


def test_a_comment_or_string_mentioning_the_decorator_does_not_satisfy_the_rule(tmp_path: Path) -> None:
    # Given a handler that only talks about @job.handler
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(CLEANUP_HANDLER, "@job.handler\n", '# @job.handler\nNOTE = "@job.handler"\n')

    violations = copy.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource="SessionCleanupFunction", containing="not a scheduled job")


def test_a_handler_module_that_never_creates_a_scheduled_job_is_caught(tmp_path: Path) -> None:
    # Given a plain Lambda handler whose docstring claims the kit
    copy = PlantedCopy.of_project(tmp_path)
    copy.write(
        CLEANUP_HANDLER,
        '"""Uses @job.handler from clockless (it does not)."""\n\n'
        "from typing import Any\n\n\n"
        "def lambda_handler(event: Any, context: Any) -> dict[str, str]:\n"
        '    return {"ok": "yes"}\n',
    )

    violations = copy.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource="SessionCleanupFunction", containing="creates no clockless")


def test_a_decorated_handler_rebound_to_an_undecorated_one_is_caught(tmp_path: Path) -> None:
    # Lambda finds the last binding of the name, so that is the one that must be the job.
    copy = PlantedCopy.of_project(tmp_path)
    copy.append(
        CLEANUP_HANDLER, "\n\ndef lambda_handler(event: object, context: object) -> None:  # noqa: F811\n    pass\n"
    )

    violations = copy.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource="SessionCleanupFunction", containing="not a scheduled job")


def test_a_job_named_differently_from_its_schedule_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(CLEANUP_HANDLER, 'JOB_NAME = "session-cleanup"', 'JOB_NAME = "sessions-cleanup"')

    violations = copy.violations("scheduled-by-kit")

    found(violations, file=CLEANUP_HANDLER, resource="SessionCleanupFunction", containing="'sessions-cleanup'")


def test_a_handler_setting_that_names_no_module_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(
        TEMPLATE, "Handler: session_cleanup.handler.lambda_handler", "Handler: session_cleanup.handlers.lambda_handler"
    )

    violations = copy.violations("scheduled-by-kit")

    found(violations, file=TEMPLATE, resource="SessionCleanupFunction", containing="names no module")


# ---------------------------------------------------------------------------------------------- tick-identity
INPUT_TIME = '"scheduled_time": "<aws.scheduler.scheduled-time>",'
INPUT_ARN = '"schedule_arn": "<aws.scheduler.schedule-arn>",'


@pytest.mark.parametrize(
    ("carried", "placeholder"),
    [(INPUT_TIME, "<aws.scheduler.scheduled-time>"), (INPUT_ARN, "<aws.scheduler.schedule-arn>")],
    ids=["scheduled-time", "schedule-arn"],
)
def test_an_input_without_the_ticks_identity_is_caught(tmp_path: Path, carried: str, placeholder: str) -> None:
    # Given the hourly schedule's Input without one of the tick's identity fields
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, carried, "", after=CLEANUP)

    violations = copy.violations("tick-identity")

    found(
        violations,
        file=TEMPLATE,
        resource="SessionCleanupFunction.Events.Hourly",
        containing=f"does not carry {placeholder}",
    )


def test_a_scheduled_time_filled_from_the_execution_id_is_caught(tmp_path: Path) -> None:
    # Given an Input whose scheduled_time is the per-attempt execution id
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(
        TEMPLATE,
        INPUT_TIME,
        '"scheduled_time": "<aws.scheduler.execution-id>", "at": "<aws.scheduler.scheduled-time>",',
        after=CLEANUP,
    )

    violations = copy.violations("tick-identity")

    found(violations, file=TEMPLATE, resource="SessionCleanupFunction.Events.Hourly", containing="is not a tick")


@pytest.mark.parametrize(
    ("key", "complaint"),
    [
        ('"[job, execution_id]"', "execution id"),
        ('"[job, attempt, scheduled_time]"', "attempt number"),
        ('"@"', "execution id"),
        ('"job"', "does not include the scheduled time"),
    ],
)
def test_a_kit_keyed_on_anything_but_job_and_scheduled_time_is_caught(tmp_path: Path, key: str, complaint: str) -> None:
    # Given the kit's idempotency key changed
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(
        KIT_JOB, 'IDEMPOTENCY_KEY_JMESPATH: Final = "[job, scheduled_time]"', f"IDEMPOTENCY_KEY_JMESPATH: Final = {key}"
    )

    violations = copy.violations("tick-identity")

    # Then the rule reports the kit's IdempotencyConfig, in the layer that ships it
    violation = found(violations, file=KIT_JOB, resource="ClocklessLayer", containing=complaint)
    assert "IdempotencyConfig(" in (copy.root / KIT_JOB).read_text().splitlines()[violation.line - 1]  # type: ignore[operator]


def test_a_kit_config_without_a_key_expression_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(KIT_JOB, "event_key_jmespath=IDEMPOTENCY_KEY_JMESPATH,", "")

    violations = copy.violations("tick-identity")

    found(violations, file=KIT_JOB, resource="ClocklessLayer", containing="whole event")


def test_a_function_keying_idempotency_itself_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.append(
        CLEANUP_HANDLER,
        "\nfrom aws_lambda_powertools.utilities.idempotency import idempotent_function  # noqa: E402\n",
    )

    violations = copy.violations("tick-identity")

    found(violations, file=CLEANUP_HANDLER, resource="SessionCleanupFunction", containing="idempotent_function")


# ---------------------------------------------------------------------------------------------- isolation
def test_checking_a_copy_leaves_the_imported_project_modules_alone(tmp_path: Path) -> None:
    # The layering rule reads a copy's packages under the project's own package names.
    import clockless
    import session_cleanup.logic

    copy = PlantedCopy.of_project(tmp_path)
    copy.append(CLEANUP_LOGIC, "\nimport boto3\n")
    path_before = list(sys.path)

    copy.violations("layering")

    assert sys.modules["clockless"] is clockless
    assert sys.modules["session_cleanup.logic"] is session_cleanup.logic
    assert sys.path == path_before
