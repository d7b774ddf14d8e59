"""Rule `log-groups`: planted functions without their log group, with a group that keeps logs
forever or is created after them, or logging under another service, each caught."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
RULE = "log-groups"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations(RULE) == []


def test_a_function_without_its_log_group_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"      LoggingConfig:\n        LogGroup: !Ref {HOURLY_JOB.stem}LogGroup\n",
        "",
        resource=f"{HOURLY_JOB.stem}Function",
    )

    violations = planted.violations(RULE)

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="is not a !Ref to a log group")
    assert len(violations) == 1


def test_a_log_group_without_retention_or_named_after_its_function_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        '      LogGroupName: !Sub "/aws/lambda/${AWS::StackName}/job-trigger"\n'
        "      RetentionInDays: !Ref LogRetentionInDays\n",
        '      LogGroupName: !Sub "/aws/lambda/${JobTriggerFunction}"\n',
        resource="JobTriggerLogGroup",
    )

    violations = planted.violations(RULE)

    found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing="has no RetentionInDays")
    found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing="is named after the function")


def test_a_missing_or_wrong_service_name_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "          POWERTOOLS_SERVICE_NAME: job-trigger\n", "", resource="JobTriggerFunction")
    planted.replace(
        TEMPLATE,
        f"POWERTOOLS_SERVICE_NAME: {HOURLY_JOB.name}",
        "POWERTOOLS_SERVICE_NAME: cleanup",
        after=f"  {HOURLY_JOB.stem}Function:\n",
    )

    violations = planted.violations(RULE)

    found(
        violations,
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}Function",
        containing=f"is 'cleanup', its schedule runs '{HOURLY_JOB.name}'",
    )
    found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing="POWERTOOLS_SERVICE_NAME is not set")


def test_a_worker_logging_under_another_service_or_without_its_group_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"POWERTOOLS_SERVICE_NAME: {DAILY_JOB.name}",
        "POWERTOOLS_SERVICE_NAME: window-worker",
        after=f"  {DAILY_JOB.stem}WorkerFunction:\n",
    )
    planted.replace(
        TEMPLATE,
        f"LogGroup: !Ref {HOURLY_JOB.stem}WorkerLogGroup",
        f"LogGroup: !Ref {HOURLY_JOB.stem}WorkQueue",
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
    )

    violations = planted.violations(RULE)

    found(
        violations,
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerFunction",
        containing=f"is 'window-worker', it works for job '{DAILY_JOB.name}'",
    )
    found(
        violations,
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=f"refers to {HOURLY_JOB.stem}WorkQueue, not a declared log group",
    )
