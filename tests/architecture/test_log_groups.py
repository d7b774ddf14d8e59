"""Rule `log-groups`: planted functions without their log group, with a group that keeps logs
forever or is created after them, or logging under another service, each caught."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
RULE = "log-groups"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations(RULE) == []


def test_a_function_without_its_log_group_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      LoggingConfig:\n        LogGroup: !Ref SessionCleanupLogGroup\n",
        "",
        resource="SessionCleanupFunction",
    )

    violations = planted.violations(RULE)

    found(violations, file=TEMPLATE, resource="SessionCleanupFunction", containing="is not a !Ref to a log group")
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
        "POWERTOOLS_SERVICE_NAME: session-cleanup",
        "POWERTOOLS_SERVICE_NAME: cleanup",
        after="  SessionCleanupFunction:\n",
    )

    violations = planted.violations(RULE)

    found(
        violations,
        file=TEMPLATE,
        resource="SessionCleanupFunction",
        containing="is 'cleanup', its schedule runs 'session-cleanup'",
    )
    found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing="POWERTOOLS_SERVICE_NAME is not set")


def test_a_worker_logging_under_another_service_or_without_its_group_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "POWERTOOLS_SERVICE_NAME: window-generation",
        "POWERTOOLS_SERVICE_NAME: window-worker",
        after="  WindowGenerationWorkerFunction:\n",
    )
    planted.replace(
        TEMPLATE,
        "LogGroup: !Ref SessionCleanupWorkerLogGroup",
        "LogGroup: !Ref SessionCleanupWorkQueue",
        resource="SessionCleanupWorkerFunction",
    )

    violations = planted.violations(RULE)

    found(
        violations,
        file=TEMPLATE,
        resource="WindowGenerationWorkerFunction",
        containing="is 'window-worker', it works for job 'window-generation'",
    )
    found(
        violations,
        file=TEMPLATE,
        resource="SessionCleanupWorkerFunction",
        containing="refers to SessionCleanupWorkQueue, not a declared log group",
    )
