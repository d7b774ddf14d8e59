"""Every function logs to a log group the template declares, with a retention, and names its service.

cfn-lint-serverless's WS1004 looks for a group named /aws/lambda/<function> and predates
LoggingConfig, so template.yaml turns it off and this check takes its place: each function's
`LoggingConfig.LogGroup` is a `!Ref` to a declared `AWS::Logs::LogGroup` with `RetentionInDays`
whose name does not depend on the function (so CloudFormation creates the group first, and `sam
logs` reads it), and each sets `POWERTOOLS_SERVICE_NAME`, for a scheduled job the job its schedule
names (the dead-man alarm's `service` dimension).
"""

from __future__ import annotations

from clockless_tools.template.model import Template
from tests.architecture.planting import PlantedCopy

TEMPLATE = "template.yaml"


def logging_problems(template: Template) -> list[str]:
    problems = []
    groups = template.resources_of_type("AWS::Logs::LogGroup")
    for logical_id, fn in template.functions.items():
        target = (fn.properties.get("LoggingConfig") or {}).get("LogGroup")
        group_id = target.get("Ref") if isinstance(target, dict) else None
        if group_id is None:
            problems.append(f"{logical_id}: LoggingConfig.LogGroup is not a !Ref to a log group in the template")
        elif group_id not in groups:
            problems.append(f"{logical_id}: LoggingConfig.LogGroup refers to {group_id}, not a declared log group")
        else:
            properties = groups[group_id].get("Properties") or {}
            if "RetentionInDays" not in properties:
                problems.append(f"{logical_id}: its log group {group_id} has no RetentionInDays")
            if logical_id in str(properties.get("LogGroupName", "")):
                problems.append(
                    f"{logical_id}: its log group {group_id} is named after the function, so it is created after it"
                )
        service = fn.environment.get("POWERTOOLS_SERVICE_NAME")
        if not service:
            problems.append(f"{logical_id}: POWERTOOLS_SERVICE_NAME is not set")
        for schedule in fn.schedules:
            if service and service != schedule.job:
                problems.append(
                    f"{logical_id}: POWERTOOLS_SERVICE_NAME is {service!r}, its schedule runs {schedule.job!r}"
                )
        # A worker logs and counts under the job it works for: the finisher's TickSucceeded carries
        # service=<job>, the dimension the dead-man alarm watches.
        coordinator = template.functions.get(fn.worker_of or "")
        for schedule in coordinator.schedules if coordinator is not None else []:
            if service and service != schedule.job:
                problems.append(
                    f"{logical_id}: POWERTOOLS_SERVICE_NAME is {service!r}, it works for job {schedule.job!r}"
                )
    return problems


def test_every_function_logs_to_its_declared_group_and_names_its_service(template: Template) -> None:
    assert logging_problems(template) == []


def test_a_function_without_its_log_group_is_caught(planted: PlantedCopy) -> None:
    copy = planted
    copy.replace(TEMPLATE, "      LoggingConfig:\n        LogGroup: !Ref SessionCleanupLogGroup\n", "")

    problems = logging_problems(Template.load(copy.root / TEMPLATE))

    assert problems == ["SessionCleanupFunction: LoggingConfig.LogGroup is not a !Ref to a log group in the template"]


def test_a_log_group_without_retention_or_named_after_its_function_is_caught(planted: PlantedCopy) -> None:
    copy = planted
    copy.replace(
        TEMPLATE,
        '      LogGroupName: !Sub "/aws/lambda/${AWS::StackName}/job-trigger"\n'
        "      RetentionInDays: !Ref LogRetentionInDays\n",
        '      LogGroupName: !Sub "/aws/lambda/${JobTriggerFunction}"\n',
    )

    problems = logging_problems(Template.load(copy.root / TEMPLATE))

    assert problems == [
        "JobTriggerFunction: its log group JobTriggerLogGroup has no RetentionInDays",
        "JobTriggerFunction: its log group JobTriggerLogGroup is named after the function, so it is created after it",
    ]


def test_a_missing_or_wrong_service_name_is_caught(planted: PlantedCopy) -> None:
    copy = planted
    copy.replace(TEMPLATE, "          POWERTOOLS_SERVICE_NAME: job-trigger\n", "")
    copy.replace(
        TEMPLATE,
        "POWERTOOLS_SERVICE_NAME: session-cleanup",
        "POWERTOOLS_SERVICE_NAME: cleanup",
        after="  SessionCleanupFunction:\n",
    )

    problems = logging_problems(Template.load(copy.root / TEMPLATE))

    assert problems == [
        "SessionCleanupFunction: POWERTOOLS_SERVICE_NAME is 'cleanup', its schedule runs 'session-cleanup'",
        "JobTriggerFunction: POWERTOOLS_SERVICE_NAME is not set",
    ]


def test_a_worker_logging_under_another_service_or_without_its_group_is_caught(planted: PlantedCopy) -> None:
    copy = planted
    copy.replace(
        TEMPLATE,
        "POWERTOOLS_SERVICE_NAME: window-generation",
        "POWERTOOLS_SERVICE_NAME: window-worker",
        after="  WindowGenerationWorkerFunction:\n",
    )
    copy.replace(TEMPLATE, "LogGroup: !Ref SessionCleanupWorkerLogGroup", "LogGroup: !Ref SessionCleanupWorkQueue")

    problems = logging_problems(Template.load(copy.root / TEMPLATE))

    assert problems == [
        "WindowGenerationWorkerFunction: POWERTOOLS_SERVICE_NAME is 'window-worker', "
        "it works for job 'window-generation'",
        "SessionCleanupWorkerFunction: LoggingConfig.LogGroup refers to SessionCleanupWorkQueue, "
        "not a declared log group",
    ]
