"""Rule `least-privilege`: A function's policies name only the tables and queues it uses.

"Uses" is derived: the resources its own environment references (the variables its code reads
table names from), the kit's tables in Globals' environment, the tables its job declares
(`Metadata: clockless: tables`, from the job's `Tables` in Mappings.Jobs: Globals' environment
names every job's tables, so it cannot tell), its asynchronous-invocation destinations and
dead-letter queue, and the queues an event source mapping feeds it from. Reading a queue is narrower still: the
actions that take messages off a queue (receive, delete, change visibility, purge) are allowed only
on the queues an event source mapping polls for the function, so a coordinator that only sends, or
a worker on its dead-letter queue, cannot consume them. SAM's `Events: Type: SQS` attaches the
managed AWSLambdaSQSQueueExecutionRole (every queue of the account): workers are fed by an explicit
`AWS::Lambda::EventSourceMapping` and their own statement on their queue instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation, sub_text
from clockless_tools.template.model import Function

LEAST_PRIVILEGE: Final = "least-privilege"

_SCOPED_TYPES: Final = ("AWS::DynamoDB::Table", "AWS::SQS::Queue")
_SENSITIVE_SERVICES: Final = {"dynamodb", "sqs", "lambda"}
# AWS managed policies that grant a whole service (e.g. AmazonDynamoDBFullAccess, AWSLambda_FullAccess), or
# consume every queue of the account (AWSLambdaSQSQueueExecutionRole).
_BROAD_MANAGED = re.compile(r"(DynamoDB|SQS|Lambda).*FullAccess|AWSLambdaSQSQueueExecutionRole", re.IGNORECASE)
# SQS actions that take messages off a queue: only for the queues an event source mapping polls.
_CONSUME_ACTIONS: Final = frozenset(
    {
        "sqs:receivemessage",
        "sqs:deletemessage",
        "sqs:deletemessagebatch",
        "sqs:changemessagevisibility",
        "sqs:changemessagevisibilitybatch",
        "sqs:purgequeue",
    }
)
# Tables every function may use, named in Globals' environment.
_KIT_TABLE_KINDS: Final = ("ledger", "idempotency")
# Policy-template parameters that name a resource (DynamoDBCrudPolicy: {TableName: ...}).
_NAMING_PARAMETERS: Final = {"TableName", "QueueName"}


def check_least_privilege(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.functions.items():
        used = _used_resources(project, fn)
        yield from _check_sam_queue_events(project, logical_id, fn)
        policies = fn.prop("Policies")
        if policies is None:
            continue
        for index, policy in enumerate(policies if isinstance(policies, list) else [policies]):
            where = f"Policies[{index}]"
            if isinstance(policy, str):
                yield from _check_managed(project, logical_id, where, policy)
            elif isinstance(policy, Mapping) and "Statement" in policy:
                yield from _check_document(project, logical_id, where, policy, used)
                yield from _check_consumers(project, fn, where, policy)
            elif isinstance(policy, Mapping):
                yield from _check_policy_templates(project, logical_id, where, policy, used)


def _used_resources(project: Project, fn: Function) -> set[str]:
    destinations = (fn.event_invoke_config.get("DestinationConfig") or {}).values()
    declared = [{"Ref": table} for table in fn.declared_tables]
    sources = [fn.own_environment, list(destinations), fn.prop("DeadLetterQueue"), declared]
    # Globals' variables name every job's tables, so that any function can find them: of those, a
    # function uses the kit's (ledger, idempotency) and the tables its job declares, no others.
    shared_environment = (project.template.function_globals.get("Environment") or {}).get("Variables") or {}
    kit_tables = set(project.template.tables_of_kind(*_KIT_TABLE_KINDS))
    shared = project.ids_of_type(shared_environment, *_SCOPED_TYPES) & kit_tables
    return project.ids_of_type(sources, *_SCOPED_TYPES) | shared | _polled_queues(project, fn)


def _polled_queues(project: Project, fn: Function) -> set[str]:
    template = project.template
    return {str(esm.source) for esm in template.mappings_of(fn.logical_id) if esm.source in template.queues}


def _check_sam_queue_events(project: Project, logical_id: str, fn: Function) -> Iterator[Violation]:
    for event_id, event in (fn.properties.get("Events") or {}).items():
        if isinstance(event, Mapping) and event.get("Type") == "SQS":
            yield _violation(
                project,
                logical_id,
                f"Events.{event_id} is a SAM SQS event, which attaches AWSLambdaSQSQueueExecutionRole: receive and "
                "delete on every queue of the account",
                "declare an AWS::Lambda::EventSourceMapping and allow sqs:ReceiveMessage, sqs:DeleteMessage and "
                "sqs:GetQueueAttributes on the one queue",
            )


def _violation(project: Project, logical_id: str, message: str, fix: str) -> Violation:
    return Violation(LEAST_PRIVILEGE, project.template_file, logical_id, message, fix)


def _check_managed(project: Project, logical_id: str, where: str, policy: str) -> Iterator[Violation]:
    if _BROAD_MANAGED.search(policy):
        yield _violation(
            project,
            logical_id,
            f"{where} attaches {policy}, which grants the service on every resource",
            "replace it with a statement naming only the function's own tables and queues",
        )


def _check_policy_templates(
    project: Project, logical_id: str, where: str, policy: Mapping[str, Any], used: set[str]
) -> Iterator[Violation]:
    for template_name, parameters in policy.items():
        for unused in sorted(project.ids_of_type(parameters, *_SCOPED_TYPES) - used):
            yield _violation(
                project,
                logical_id,
                f"{where} {template_name} grants {unused}, which the function does not use "
                "(no variable in its Environment references it)",
                f"drop {template_name} on {unused}, or reference {unused} in the Environment if the code uses it",
            )
        if isinstance(parameters, Mapping):
            for parameter in sorted(_NAMING_PARAMETERS & set(parameters)):
                if isinstance(parameters[parameter], str):
                    yield _violation(
                        project,
                        logical_id,
                        f"{where} {template_name} names {parameter} {parameters[parameter]!r} literally, "
                        "so its use cannot be checked",
                        f"reference the resource: {parameter}: !Ref <LogicalId>",
                    )


def _check_document(
    project: Project, logical_id: str, where: str, document: Mapping[str, Any], used: set[str]
) -> Iterator[Violation]:
    statements = document.get("Statement")
    for index, statement in enumerate(statements if isinstance(statements, list) else [statements]):
        if not isinstance(statement, Mapping) or statement.get("Effect", "Allow") != "Allow":
            continue
        sid = statement.get("Sid")
        label = f"{where}.Statement[{index}]" + (f" ({sid})" if sid else "")
        services = _services(statement.get("Action"))
        sensitive = sorted(services & _SENSITIVE_SERVICES) if "*" not in services else sorted(_SENSITIVE_SERVICES)
        if "NotResource" in statement and sensitive:
            yield _violation(
                project,
                logical_id,
                f"{label} allows {'/'.join(sensitive)} actions on NotResource, i.e. on almost everything",
                "list the resources in Resource instead",
            )
        resources = statement.get("Resource")
        for resource in resources if isinstance(resources, list) else [resources]:
            if resource is None:
                continue
            if sensitive and _is_wildcard(project, resource):
                yield _violation(
                    project,
                    logical_id,
                    f"{label} allows {'/'.join(sensitive)} actions on {sub_text(resource)!r}",
                    "name the function's own tables and queues with !GetAtt <LogicalId>.Arn",
                )
            for unused in sorted(project.ids_of_type(resource, *_SCOPED_TYPES) - used):
                yield _violation(
                    project,
                    logical_id,
                    f"{label} names {unused}, which the function does not use "
                    "(no variable in its Environment references it)",
                    f"drop {unused} from the statement, or reference it in the Environment if the code uses it",
                )


def _check_consumers(project: Project, fn: Function, where: str, document: Mapping[str, Any]) -> Iterator[Violation]:
    polled = _polled_queues(project, fn)
    statements = document.get("Statement")
    for index, statement in enumerate(statements if isinstance(statements, list) else [statements]):
        if not isinstance(statement, Mapping) or statement.get("Effect", "Allow") != "Allow":
            continue
        actions = statement.get("Action")
        named = {str(a).lower() for a in (actions if isinstance(actions, list) else [actions]) if isinstance(a, str)}
        consuming = sorted(a for a in named if a in _CONSUME_ACTIONS or a in ("sqs:*", "*"))
        if not consuming:
            continue
        sid = statement.get("Sid")
        label = f"{where}.Statement[{index}]" + (f" ({sid})" if sid else "")
        for queue in sorted(project.ids_of_type(statement.get("Resource"), "AWS::SQS::Queue") - polled):
            yield _violation(
                project,
                fn.logical_id,
                f"{label} allows {', '.join(consuming)} on {queue}, which no event source mapping polls for it: "
                "it could take messages meant for another reader",
                f"allow only sqs:SendMessage on {queue}, or feed the function from it with an event source mapping",
            )


def _services(actions: Any) -> set[str]:
    found = set()
    for action in actions if isinstance(actions, list) else [actions]:
        if isinstance(action, str):
            found.add("*" if action == "*" else action.split(":", 1)[0].lower())
    return found


def _is_wildcard(project: Project, resource: Any) -> bool:
    """`*`, or a pattern like `arn:...:table/*` that names no resource of this template."""
    text = sub_text(resource)
    if text is None:
        return False
    return "*" in text and not project.referenced_ids(resource)


LEAST_PRIVILEGE_RULE = Rule(
    LEAST_PRIVILEGE,
    "policies name only the tables and queues the function uses; no '*' resource for DynamoDB, SQS or Lambda; "
    "messages are received and deleted only from the queue an event source mapping polls for the function",
    check_least_privilege,
)
