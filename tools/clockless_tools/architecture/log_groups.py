"""Rule `log-groups`: every function logs to a log group the template declares, with a retention,
and names its service.

cfn-lint-serverless's WS1004 looks for a group named /aws/lambda/<function> and predates
`LoggingConfig`, so template.yaml turns it off and this rule takes its place: each function's
`LoggingConfig.LogGroup` is a `!Ref` to a declared `AWS::Logs::LogGroup` with `RetentionInDays`
whose name does not depend on the function (so CloudFormation creates the group first and an early
invocation cannot create it without a retention), and each sets `POWERTOOLS_SERVICE_NAME`: for a
scheduled job the job its schedule names, for a worker the job of the function it works for (the
finisher's `TickSucceeded` carries `service=<job>`, the dimension the dead-man alarm watches).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from clockless_tools.architecture.project import Project, Rule, Violation, sub_text

LOG_GROUPS: Final = "log-groups"
LOG_GROUP_TYPE: Final = "AWS::Logs::LogGroup"
SERVICE_VARIABLE: Final = "POWERTOOLS_SERVICE_NAME"


def check_log_groups(project: Project) -> Iterator[Violation]:
    template = project.template
    groups = template.resources_of_type(LOG_GROUP_TYPE)
    for logical_id, fn in template.functions.items():

        def violation(message: str, fix: str, logical_id: str = logical_id) -> Violation:
            return Violation(LOG_GROUPS, project.template_file, logical_id, message, fix)

        target = (fn.properties.get("LoggingConfig") or {}).get("LogGroup")
        group_id = target.get("Ref") if isinstance(target, Mapping) and set(target) == {"Ref"} else None
        if group_id is None:
            yield violation(
                "LoggingConfig.LogGroup is not a !Ref to a log group in the template: Lambda creates "
                "/aws/lambda/<function> on first use, kept forever",
                f"LoggingConfig: {{LogGroup: !Ref {logical_id.removesuffix('Function')}LogGroup}}, declared with "
                "RetentionInDays",
            )
        elif group_id not in groups:
            yield violation(
                f"LoggingConfig.LogGroup refers to {group_id}, not a declared log group",
                f"declare {group_id} as an AWS::Logs::LogGroup with RetentionInDays",
            )
        else:
            properties = groups[group_id].get("Properties") or {}
            if "RetentionInDays" not in properties:
                yield violation(
                    f"its log group {group_id} has no RetentionInDays: its logs are kept forever",
                    "RetentionInDays: !Ref LogRetentionInDays",
                )
            if logical_id in project.referenced_ids(properties.get("LogGroupName")) or logical_id in str(
                sub_text(properties.get("LogGroupName")) or ""
            ):
                yield violation(
                    f"its log group {group_id} is named after the function, so it is created after it",
                    'LogGroupName: !Sub "/aws/lambda/${AWS::StackName}/<job>"',
                )
        service = fn.environment.get(SERVICE_VARIABLE)
        if not service:
            yield violation(f"{SERVICE_VARIABLE} is not set", f"{SERVICE_VARIABLE}: <the job's name>")
            continue
        for schedule in fn.schedules:
            if service != schedule.job:
                yield violation(
                    f"{SERVICE_VARIABLE} is {service!r}, its schedule runs {schedule.job!r}",
                    f"{SERVICE_VARIABLE}: {schedule.job}",
                )
        coordinator = template.functions.get(fn.worker_of or "")
        for schedule in coordinator.schedules if coordinator is not None else []:
            if service != schedule.job:
                yield violation(
                    f"{SERVICE_VARIABLE} is {service!r}, it works for job {schedule.job!r}",
                    f"{SERVICE_VARIABLE}: {schedule.job}",
                )


LOG_GROUPS_RULE = Rule(
    LOG_GROUPS,
    "every function logs to a declared log group with a retention, not named after it, and names its job as "
    "POWERTOOLS_SERVICE_NAME (a worker: the job it works for)",
    check_log_groups,
)
