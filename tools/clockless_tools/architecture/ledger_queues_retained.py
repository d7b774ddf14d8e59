"""Rule ledger-queues-retained: deleting or replacing the stack keeps the run history and the
ticks still waiting in a queue.

The ledger table is the only history of what every tick did (Scheduler keeps none); the
scheduler's dead-letter queue and the functions' failure queues hold ticks nobody has handled
yet; a work queue holds the partitions of ticks still running, and its dead-letter queue the
partitions and items that failed. CloudFormation deletes a resource it removes or replaces unless `DeletionPolicy` and
`UpdateReplacePolicy` say `Retain`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation

LEDGER_QUEUES_RETAINED: Final = "ledger-queues-retained"
POLICIES: Final = ("DeletionPolicy", "UpdateReplacePolicy")
_QUEUE: Final = "AWS::SQS::Queue"
WORK_DEAD_LETTER_VARIABLE: Final = "WORK_DEAD_LETTER_QUEUE_URL"


def check_ledger_queues_retained(project: Project) -> Iterator[Violation]:
    for logical_id, why in _kept_resources(project).items():
        resource = project.template.resources[logical_id]
        for policy in POLICIES:
            if resource.get(policy) != "Retain":
                stated = "is not stated" if policy not in resource else f"is {resource.get(policy)!r}"
                yield Violation(
                    LEDGER_QUEUES_RETAINED,
                    project.template_file,
                    logical_id,
                    f"{policy} {stated}: {why} is lost when the stack "
                    f"{'deletes' if policy == 'DeletionPolicy' else 'replaces'} it",
                    f"{policy}: Retain on {logical_id}",
                )
    yield from _generated_queues(project)


def _kept_resources(project: Project) -> dict[str, str]:
    """Logical id -> what it holds, for the ledger tables and every queue a tick can land in."""
    kept = dict.fromkeys(project.template.tables_of_kind("ledger"), "the run history of every tick")
    for logical_id, fn in project.template.functions.items():
        failure = (fn.event_invoke_config.get("DestinationConfig") or {}).get("OnFailure") or {}
        for queue in project.ids_of_type(failure.get("Destination"), _QUEUE):
            kept[queue] = f"every tick {logical_id} failed past its retries"
        for queue in project.ids_of_type(fn.prop("DeadLetterQueue"), _QUEUE):
            kept[queue] = f"every event {logical_id} failed past its retries"
        for event_id, properties in _schedule_properties(fn.properties):
            dead_letter = properties.get("DeadLetterConfig") or {}
            for queue in project.ids_of_type(dead_letter, _QUEUE):
                kept[queue] = f"every tick the scheduler could not deliver ({logical_id}.Events.{event_id})"
        for queue in project.ids_of_type(fn.environment.get(WORK_DEAD_LETTER_VARIABLE), _QUEUE):
            kept[queue] = f"every item {logical_id} could not apply"
    for mapping in project.template.event_source_mappings.values():
        work_queue = project.template.queues.get(mapping.source or "")
        if work_queue is None:
            continue
        kept[work_queue.logical_id] = f"the partitions of ticks {mapping.function} is still applying"
        if work_queue.dead_letter_queue in project.template.queues:
            kept[work_queue.dead_letter_queue] = f"every partition {mapping.function} failed past its receives"
    return kept


def _generated_queues(project: Project) -> Iterator[Violation]:
    # `Type: SQS` without QueueLogicalId lets SAM create the queue, where no policy can be stated.
    for logical_id, fn in project.template.functions.items():
        for event_id, properties in _schedule_properties(fn.properties):
            dead_letter = properties.get("DeadLetterConfig")
            if isinstance(dead_letter, Mapping) and "Type" in dead_letter and "Arn" not in dead_letter:
                yield Violation(
                    LEDGER_QUEUES_RETAINED,
                    project.template_file,
                    f"{logical_id}.Events.{event_id}",
                    "DeadLetterConfig lets SAM create the queue, which the template cannot mark Retain",
                    "declare the queue with DeletionPolicy and UpdateReplacePolicy Retain, and set "
                    "DeadLetterConfig: {Arn: !GetAtt <Queue>.Arn}",
                )


def _schedule_properties(properties: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for event_id, event in (properties.get("Events") or {}).items():
        if isinstance(event, Mapping) and event.get("Type") in ("ScheduleV2", "Schedule"):
            yield event_id, event.get("Properties") or {}


LEDGER_QUEUES_RETAINED_RULE = Rule(
    LEDGER_QUEUES_RETAINED,
    "the ledger table, the scheduler DLQ, the functions' failure queues and the work queues and their DLQs are "
    "Retain on delete and on replace",
    check_ledger_queues_retained,
)
