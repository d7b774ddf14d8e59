"""The template's SQS queues on the embedded server (moto's SQS), with their attributes and their
RedrivePolicy resolved, so a work queue hands a message to its dead-letter queue after
maxReceiveCount receives exactly as SQS does (moto moves it on the receive after the last one)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.local.dynamodb import local_client
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template
from clockless_tools.template.queues import DEFAULT_VISIBILITY_TIMEOUT

# CloudFormation properties that are SQS queue attributes of the same name.
_ATTRIBUTES: Final = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "SqsManagedSseEnabled",
)


def sqs_client(endpoint: str) -> Any:
    return local_client("sqs", endpoint)


@dataclass(frozen=True)
class QueueSpec:
    """One AWS::SQS::Queue of the template, as the local runtime creates it (named after its logical id)."""

    logical_id: str
    attributes: dict[str, str]
    dead_letter_queue: str | None = None
    max_receive_count: int | None = None

    @property
    def visibility_timeout(self) -> int:
        return int(self.attributes.get("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT))


def _attribute(value: Any, template: Template, names: LocalNames) -> str:
    """A property as the SQS attribute's text (booleans as SQS writes them: true/false)."""
    return str(value).lower() if isinstance(value, bool) else str(resolve(value, template, names))


def queue_specs(template: Template, names: LocalNames = LocalNames()) -> dict[str, QueueSpec]:
    """Every queue the template declares, by logical id."""
    specs = {}
    for logical_id, queue in template.queues.items():
        properties = queue.properties
        attributes = {name: _attribute(properties[name], template, names) for name in _ATTRIBUTES if name in properties}
        target, max_receive = None, None
        if "RedrivePolicy" in properties:
            target, max_receive = queue.dead_letter_queue, queue.max_receive_count
            if target not in template.queues or max_receive is None:
                raise TemplateError(
                    f"{logical_id}: RedrivePolicy needs deadLetterTargetArn: !GetAtt <Queue>.Arn of a queue in the "
                    f"template and a whole maxReceiveCount, not {properties['RedrivePolicy']!r}"
                )
            arn = resolve({"Fn::GetAtt": [target, "Arn"]}, template, names)
            attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": max_receive})
        specs[logical_id] = QueueSpec(logical_id, attributes, target, max_receive)
    return specs


def create_queues(template: Template, endpoint: str, names: LocalNames = LocalNames()) -> list[str]:
    """Create every queue (dead-letter queues before the queues that name them); an existing one
    gets the template's attributes again. Returns the queues' names."""
    client = sqs_client(endpoint)
    specs = queue_specs(template, names)
    ordered = sorted(specs.values(), key=lambda spec: spec.dead_letter_queue is not None)
    existing = _existing_queues(client)
    for spec in ordered:
        url = existing.get(names.queue_name(spec.logical_id))
        if url is None:
            # A new queue takes its attributes with it (FifoQueue can only be given there).
            client.create_queue(QueueName=names.queue_name(spec.logical_id), Attributes=spec.attributes)
        elif spec.attributes:
            client.set_queue_attributes(QueueUrl=url, Attributes=spec.attributes)
    return [spec.logical_id for spec in ordered]


def _existing_queues(client: Any) -> dict[str, str]:
    """The server's queues, name -> URL: one request, where asking each queue's URL is one a queue
    (the tests create and delete the template's queues around every test that uses them)."""
    urls: list[str] = client.list_queues().get("QueueUrls", [])
    return {url.rstrip("/").rsplit("/", 1)[-1]: url for url in urls}


def queue_url(client: Any, logical_id: str, names: LocalNames = LocalNames()) -> str:
    """The local queue's URL (a queue is named after its logical id)."""
    return str(client.get_queue_url(QueueName=names.queue_name(logical_id))["QueueUrl"])


def delete_queues(template: Template, endpoint: str, names: LocalNames = LocalNames()) -> None:
    """Delete the template's queues that exist (with their messages)."""
    client = sqs_client(endpoint)
    existing = _existing_queues(client)
    for logical_id in template.queues:
        url = existing.get(names.queue_name(logical_id))
        if url is not None:
            client.delete_queue(QueueUrl=url)
