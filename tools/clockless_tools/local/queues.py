"""The template's SQS queues on the embedded server (moto's SQS), with their attributes and their
RedrivePolicy resolved, so a work queue hands a message to its dead-letter queue after
maxReceiveCount receives exactly as SQS does (moto moves it on the receive after the last one)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.local.dynamodb import local_client
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template

QUEUE_TYPE: Final = "AWS::SQS::Queue"
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
# SQS's default when a queue sets no VisibilityTimeout.
DEFAULT_VISIBILITY_TIMEOUT: Final = 30


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


def _dead_letter_target(logical_id: str, arn: Any, template: Template) -> str:
    """The logical id of the queue a RedrivePolicy's deadLetterTargetArn names (!GetAtt Queue.Arn)."""
    if isinstance(arn, Mapping) and "Fn::GetAtt" in arn:
        target, attribute = arn["Fn::GetAtt"] if isinstance(arn["Fn::GetAtt"], list) else arn["Fn::GetAtt"].split(".")
        if attribute == "Arn" and (template.resources.get(target) or {}).get("Type") == QUEUE_TYPE:
            return str(target)
    raise TemplateError(
        f"{logical_id}: RedrivePolicy.deadLetterTargetArn must be !GetAtt <Queue>.Arn of a queue in the template, "
        f"not {arn!r}"
    )


def queue_specs(template: Template, names: LocalNames = LocalNames()) -> dict[str, QueueSpec]:
    """Every queue the template declares, by logical id."""
    specs = {}
    for logical_id, resource in template.resources_of_type(QUEUE_TYPE).items():
        properties = resource.get("Properties") or {}
        attributes = {name: _attribute(properties[name], template, names) for name in _ATTRIBUTES if name in properties}
        redrive = properties.get("RedrivePolicy")
        target, max_receive = None, None
        if redrive is not None:
            if isinstance(redrive, str):
                redrive = json.loads(redrive)
            if not isinstance(redrive, Mapping) or "maxReceiveCount" not in redrive:
                raise TemplateError(f"{logical_id}: RedrivePolicy needs deadLetterTargetArn and maxReceiveCount")
            target = _dead_letter_target(logical_id, redrive.get("deadLetterTargetArn"), template)
            max_receive = int(redrive["maxReceiveCount"])
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
    for spec in ordered:
        url = client.create_queue(QueueName=spec.logical_id)["QueueUrl"]
        if spec.attributes:
            client.set_queue_attributes(QueueUrl=url, Attributes=spec.attributes)
    return [spec.logical_id for spec in ordered]


def queue_url(client: Any, logical_id: str) -> str:
    """The local queue's URL (a queue is named after its logical id)."""
    return str(client.get_queue_url(QueueName=logical_id)["QueueUrl"])
