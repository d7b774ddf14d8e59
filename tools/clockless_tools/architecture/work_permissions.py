"""Rule `work-permissions`: the fan-out's functions may do what the kit does with their queues and
the ledger, and nothing checks it before a deploy otherwise.

moto enforces no IAM, so every local run and test passes with a policy that AWS refuses: a
coordinator that may not send to its work queue fails every tick after its claim; a worker whose
role may not receive from its queue makes the event source mapping fail to create ("the provided
execution role does not have permissions to call ReceiveMessage"); one that may not send fails at
its first continuation or failed item. `least-privilege` keeps policies from naming too much; this
rule keeps them from naming too little, for exactly what the kit calls:

- coordinator (the function a worker declares `worker_of`): `sqs:SendMessage` (SendMessageBatch is
  authorized by it) on the queue its `WORK_QUEUE_URL` names;
- worker: `sqs:ReceiveMessage`, `sqs:DeleteMessage`, `sqs:GetQueueAttributes` on the queue its event
  source mapping polls, and `sqs:ChangeMessageVisibility` there (every message held only as long as
  its attempt can live, and a failed message's backoff); `sqs:SendMessage` on its `WORK_QUEUE_URL`
  (continuations, and a buffered tick's start) and `WORK_DEAD_LETTER_QUEUE_URL`;
  `dynamodb:GetItem`, `dynamodb:UpdateItem`, `dynamodb:Query`, `dynamodb:ConditionCheckItem` on the
  ledger (`LEDGER_TABLE_NAME`).

Grants are read from the function's inline statements (`Resource: !GetAtt <Queue or Table>.Arn`)
and SAM's SQSPollerPolicy / SQSSendMessagePolicy / DynamoDBCrudPolicy templates.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.model import Function
from clockless_tools.template.queues import resource_id

WORK_PERMISSIONS: Final = "work-permissions"

POLL: Final = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
SEND: Final = ("sqs:SendMessage",)
# Every message is held only until its attempt is over, and a failed one is shown again after
# seconds, not the visibility timeout (redelivery).
BACKOFF: Final = ("sqs:ChangeMessageVisibility",)
# ConditionCheckItem: a partition's first lease is a transaction checking the tick entry (trust).
LEDGER: Final = ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:ConditionCheckItem")

# What SAM's policy templates allow, on the resource their parameter names.
_TEMPLATES: Final = {
    "SQSPollerPolicy": (
        "QueueName",
        (*POLL, "sqs:ChangeMessageVisibility", "sqs:ChangeMessageVisibilityBatch", "sqs:DeleteMessageBatch"),
    ),
    "SQSSendMessagePolicy": ("QueueName", ("sqs:SendMessage*",)),
    "DynamoDBCrudPolicy": (
        "TableName",
        ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"),
    ),
}

_WHOLE_ARN: Final = re.compile(r"\$\{([A-Za-z0-9]+)\.Arn\}")
# A table's index: `!Sub "${Table.Arn}/index/<name>"` (or `/index/*`), granted as `Table/index/<name>`.
_INDEX_ARN: Final = re.compile(r"\$\{([A-Za-z0-9]+)\.Arn\}(/index/[A-Za-z0-9_.*-]+)")

Grants = list[tuple[str, set[str]]]


def check_work_permissions(project: Project) -> Iterator[Violation]:
    template = project.template
    for logical_id, worker in template.worker_functions.items():
        needs: list[tuple[str, tuple[str, ...], str]] = []
        for mapping in template.mappings_of(logical_id):
            if mapping.source in template.queues:
                needs.append((mapping.source, POLL, f"the event source mapping {mapping.logical_id} polls it"))
                needs.append(
                    (
                        mapping.source,
                        BACKOFF,
                        "a message the worker failed comes back after a backoff, and a last receive reaches the DLQ "
                        "when its attempt is over",
                    )
                )
        for variable, why in (
            (
                "WORK_QUEUE_URL",
                "continuations and a buffered tick's start go there: without it a partition that hands on "
                "fails at every hop, and a buffered tick never starts",
            ),
            ("WORK_DEAD_LETTER_QUEUE_URL", "items it cannot apply go there"),
        ):
            queue = resource_id(worker.environment.get(variable))
            if queue in template.queues:
                needs.append((queue, SEND, f"{why} ({variable})"))
        ledger = resource_id(worker.environment.get("LEDGER_TABLE_NAME"))
        if ledger in template.tables:
            needs.append((ledger, LEDGER, "partition leases, cursors, counters and the tick's finish live there"))
        yield from _missing(project, worker, needs)
        coordinator = template.functions.get(worker.worker_of or "")
        sent_to = resource_id(coordinator.environment.get("WORK_QUEUE_URL")) if coordinator else None
        if coordinator is not None and sent_to in template.queues:
            yield from _missing(project, coordinator, [(sent_to, SEND, "it sends the tick's partitions there")])


def _missing(project: Project, fn: Function, needs: list[tuple[str, tuple[str, ...], str]]) -> Iterator[Violation]:
    grants = grants_of(project, fn)
    seen: set[tuple[str, str]] = set()
    for resource, actions, why in needs:
        for action in actions:
            if (resource, action) in seen or allowed(grants, resource, action):
                continue
            seen.add((resource, action))
            yield Violation(
                WORK_PERMISSIONS,
                project.template_file,
                fn.logical_id,
                f"may not {action} on {resource}, which the kit calls: {why}; AWS refuses it though every local "
                "run passes (moto enforces no IAM)",
                f"add {action} on !GetAtt {resource}.Arn to a statement of {fn.logical_id}'s Policies",
            )


def allowed(grants: Grants, resource: str, action: str) -> bool:
    """Whether `grants` allow `action` on `resource` (a logical id, or `Table/index/<name>`)."""
    return any(
        fnmatch.fnmatchcase(resource, granted) and any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)
        for granted, patterns in grants
    )


def grants_of(project: Project, fn: Function) -> Grants:
    """(resource, action patterns) pairs the function's own policies allow."""
    grants: Grants = []
    policies = fn.prop("Policies")
    for policy in policies if isinstance(policies, list) else [policies]:
        if not isinstance(policy, Mapping):
            continue
        if "Statement" in policy:
            statements = policy.get("Statement")
            for statement in statements if isinstance(statements, list) else [statements]:
                grants.extend(_statement_grants(project, statement))
            continue
        for name, parameters in policy.items():
            if name in _TEMPLATES and isinstance(parameters, Mapping):
                parameter, actions = _TEMPLATES[name]
                for resource in project.referenced_ids(parameters.get(parameter)):
                    grants.append((resource, set(actions)))
                    if name == "DynamoDBCrudPolicy":  # SAM's template names the table's indexes too
                        grants.append((f"{resource}/index/*", set(actions)))
    return grants


def _statement_grants(project: Project, statement: Any) -> Grants:
    if not isinstance(statement, Mapping) or statement.get("Effect", "Allow") != "Allow":
        return []
    actions = statement.get("Action")
    patterns = {str(a) for a in (actions if isinstance(actions, list) else [actions]) if isinstance(a, str)}
    resources = statement.get("Resource")
    return [
        (resource, patterns)
        for value in (resources if isinstance(resources, list) else [resources])
        if (resource := _whole_resource(project, value)) is not None
    ]


def _whole_resource(project: Project, value: Any) -> str | None:
    """The resource an ARN names as a whole: `!GetAtt X.Arn` or `!Sub "${X.Arn}"`, or a table's index
    (`${Table.Arn}/index/<name>`, as `Table/index/<name>`); not any other pattern."""
    named = resource_id(value)
    if named is None and isinstance(value, Mapping) and isinstance(value.get("Fn::Sub"), str):
        index = _INDEX_ARN.fullmatch(value["Fn::Sub"])
        if index is not None and index.group(1) in project.template.resources:
            return f"{index.group(1)}{index.group(2)}"
        match = _WHOLE_ARN.fullmatch(value["Fn::Sub"])
        named = match.group(1) if match else None
    return named if named in project.template.resources else None


WORK_PERMISSIONS_RULE = Rule(
    WORK_PERMISSIONS,
    "a coordinator may send to its work queue; a worker may poll its queue, send continuations and failed items, "
    "and get, update and query the ledger",
    check_work_permissions,
)
