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

Least privilege also means what the code calls. An action whose use shows in the code is granted
only where it does: `dynamodb:ConditionCheckItem` (a `ConditionCheck` in a transaction) on a table
of the job only when the function's own code builds one, on the kit's tables (ledger, idempotency)
only when the kit's layer does. X-Ray's write access (SAM attaches AWSXrayWriteOnlyAccess, on every
resource, to a function with any `Tracing`, PassThrough included; or a policy that names it) only
when the code sends traces (Powertools' `Tracer` or the X-Ray SDK). The ledger requests a job's
overlap policy adds (`skip`, `buffer`: rule overlap-declared's `overlap_calls`) are granted only to
the functions of a job whose code declares that policy: a `run-both` job's coordinator may not
Query, PutItem or ConditionCheckItem on the ledger, nor its worker Query the succeeded index.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from clockless.overlap import Overlap
from clockless_tools.architecture.overlap_declared import declared_overlap, overlap_calls
from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation, per_file, sub_text
from clockless_tools.architecture.reaper_covers_fan_out import runs_the_reaper
from clockless_tools.architecture.work_permissions import allowed, grants_of
from clockless_tools.template.model import Function
from clockless_tools.template.queues import resource_id

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
# AWS managed policies that grant X-Ray's write actions: what SAM attaches for `Tracing`.
_XRAY_MANAGED = re.compile(r"AWSXRay|AWSXray", re.IGNORECASE)
# What the code shows it uses: a transaction's ConditionCheck; traces sent.
CONDITION_CHECK: Final = "condition-check"
TRACING: Final = "tracing"
_CONDITION_CHECK_ACTION: Final = "dynamodb:conditioncheckitem"


def check_least_privilege(project: Project) -> Iterator[Violation]:
    kit_tables = set(project.template.tables_of_kind(*_KIT_TABLE_KINDS))
    for logical_id, fn in project.template.functions.items():
        used = _used_resources(project, fn)
        own, layer = code_uses(project, fn)
        yield from _check_sam_queue_events(project, logical_id, fn)
        yield from _check_tracing(project, logical_id, fn, own | layer)
        yield from _check_overlap_grants(project, logical_id, fn)
        policies = fn.prop("Policies")
        if policies is None:
            continue
        for index, policy in enumerate(policies if isinstance(policies, list) else [policies]):
            where = f"Policies[{index}]"
            if isinstance(policy, str):
                yield from _check_managed(project, logical_id, where, policy, own | layer)
            elif isinstance(policy, Mapping) and "Statement" in policy:
                yield from _check_document(project, logical_id, where, policy, used)
                yield from _check_consumers(project, fn, where, policy)
                # The kit's checks are on its own tables; the job's code checks (only) the job's.
                checked = kit_tables if CONDITION_CHECK in layer else set()
                if CONDITION_CHECK in own:
                    checked = checked | (set(project.template.tables) - kit_tables)
                yield from _check_condition_checks(project, logical_id, where, policy, checked)
            elif isinstance(policy, Mapping):
                yield from _check_policy_templates(project, logical_id, where, policy, used)


def code_uses(project: Project, fn: Function) -> tuple[set[str], set[str]]:
    """What the function's own code (its CodeUri) and the code of its layers show they use:
    `CONDITION_CHECK`, `TRACING`."""
    code_dir = project.code_dir(fn)
    layer_dirs = [d.resolve() for d in project.layer_dirs.values()]
    own: set[str] = set()
    layer: set[str] = set()
    for source in project.sources:
        path = source.path.resolve()
        if any(_inside(path, d) for d in layer_dirs):
            layer.update(_uses(source))
        elif code_dir is not None and _inside(path, code_dir.resolve()):
            own.update(_uses(source))
    return own, layer


def _inside(path: Path, directory: Path) -> bool:
    return path.is_relative_to(directory)


@per_file
def _uses(source: SourceFile) -> Iterator[str]:
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Constant) and node.value == "ConditionCheck":
            yield CONDITION_CHECK  # the key of a TransactWriteItems action
        elif isinstance(node, ast.Attribute) and node.attr == "condition_check":
            yield CONDITION_CHECK  # PynamoDB's TransactWrite.condition_check
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.startswith("aws_xray_sdk") or any(alias.name == "Tracer" for alias in node.names):
                yield TRACING
        elif isinstance(node, ast.Import) and any(alias.name.startswith("aws_xray_sdk") for alias in node.names):
            yield TRACING


def _check_tracing(project: Project, logical_id: str, fn: Function, uses: set[str]) -> Iterator[Violation]:
    tracing = fn.prop("Tracing")
    if tracing and TRACING not in uses:
        where = "Tracing" if "Tracing" in fn.properties else "Globals' Tracing"
        yield _violation(
            project,
            logical_id,
            f"{where}: {tracing} makes SAM attach AWSXrayWriteOnlyAccess (X-Ray writes on every resource), "
            "and no code of the function sends traces",
            "leave Tracing out (Lambda's default passes no trace on), or send traces with Powertools' Tracer",
        )


def _check_condition_checks(
    project: Project, logical_id: str, where: str, document: Mapping[str, Any], checked: set[str]
) -> Iterator[Violation]:
    for label, statement in _allow_statements(where, document):
        actions = statement.get("Action")
        named = {str(a).lower() for a in (actions if isinstance(actions, list) else [actions]) if isinstance(a, str)}
        if _CONDITION_CHECK_ACTION not in named:
            continue
        for table in sorted(project.ids_of_type(statement.get("Resource"), "AWS::DynamoDB::Table") - checked):
            yield _violation(
                project,
                logical_id,
                f"{label} allows dynamodb:ConditionCheckItem on {table}, and no code the function runs checks it "
                "in a transaction (no ConditionCheck)",
                f"drop dynamodb:ConditionCheckItem from the statement on {table}",
            )


def _check_overlap_grants(project: Project, logical_id: str, fn: Function) -> Iterator[Violation]:
    """Ledger actions the job's overlap policy never sends, granted all the same."""
    template = project.template
    job = logical_id if logical_id in template.scheduled_functions else fn.worker_of
    if job is None or job not in template.scheduled_functions:
        return
    policy = declared_overlap(project, job)
    if policy is None:
        return  # overlap-declared reports a policy it cannot read
    own = {p: [c for c in overlap_calls(project, job, p) if c.fn.logical_id == logical_id] for p in Overlap}
    sent = {(call.resource, call.action) for call in own[policy]} | _reaper_calls(project, fn)
    grants = grants_of(project, fn)
    for call in own[Overlap.BUFFER]:
        if (call.resource, call.action) in sent or not allowed(grants, call.resource, call.action):
            continue
        needing = " or ".join(repr(p.value) for p in Overlap if any(c.action == call.action for c in own[p]))
        yield _violation(
            project,
            logical_id,
            f"may {call.action} on {call.resource}, which only overlap={needing} sends (it {call.why}); "
            f"{job}'s code declares overlap={policy.value!r}",
            f"make the job's Mappings.Jobs entry say Overlap: {policy.value} (OverlapGrants then leaves it out), "
            f"or drop {call.action} on {call.resource} from {logical_id}'s Policies",
        )


def _reaper_calls(project: Project, fn: Function) -> set[tuple[str, str]]:
    """The ledger Query of a function whose handler runs the tick reaper (clockless.reaper reads the
    tick entries and partition records of the jobs it settles)."""
    ledger = resource_id(fn.environment.get("LEDGER_TABLE_NAME"))
    return {(ledger, "dynamodb:Query")} if ledger and runs_the_reaper(project, fn) else set()


def _allow_statements(where: str, document: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    statements = document.get("Statement")
    for index, statement in enumerate(statements if isinstance(statements, list) else [statements]):
        if isinstance(statement, Mapping) and statement.get("Effect", "Allow") == "Allow":
            sid = statement.get("Sid")
            yield f"{where}.Statement[{index}]" + (f" ({sid})" if sid else ""), statement


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


def _check_managed(project: Project, logical_id: str, where: str, policy: str, uses: set[str]) -> Iterator[Violation]:
    if _XRAY_MANAGED.search(policy) and TRACING not in uses:
        yield _violation(
            project,
            logical_id,
            f"{where} attaches {policy}, X-Ray writes on every resource, and no code of the function sends traces",
            f"drop {policy}",
        )
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
    "messages are received and deleted only from the queue an event source mapping polls for the function; "
    "ConditionCheckItem and X-Ray only where the code uses them, the ledger calls of an overlap policy only where the "
    "job declares it",
    check_least_privilege,
)
