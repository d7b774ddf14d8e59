"""The template's SQS queues and the Lambda event source mappings that feed functions from them:
what the fan-out of a tick runs on (docs/fan-out.md).

Values are read as the template states them, with SQS's and Lambda's defaults where a property is
left out, so a rule and the local runtime see the same queue AWS would create. A property given
as an intrinsic that names no literal (a `!Ref` to a parameter, say) reads as None: a rule then
says it cannot be known rather than guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

QUEUE_TYPE: Final = "AWS::SQS::Queue"
EVENT_SOURCE_MAPPING_TYPE: Final = "AWS::Lambda::EventSourceMapping"

# SQS's defaults for a queue created without the attribute.
DEFAULT_VISIBILITY_TIMEOUT: Final = 30
DEFAULT_MESSAGE_RETENTION: Final = 345600
# Lambda's default BatchSize for an SQS event source.
DEFAULT_SQS_BATCH_SIZE: Final = 10


def literal_int(value: Any) -> int | None:
    """An integer stated literally (CloudFormation accepts "30" as well as 30); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def resource_id(value: Any) -> str | None:
    """The logical id a `!Ref <Resource>` or `!GetAtt <Resource>.Arn` names (a queue, a function, a table); None
    for anything else."""
    if isinstance(value, Mapping) and len(value) == 1:
        ((name, argument),) = value.items()
        if name == "Fn::GetAtt" and isinstance(argument, list) and argument[1:] == ["Arn"]:
            return str(argument[0])
        if name == "Ref" and isinstance(argument, str):
            return argument
    return None


@dataclass(frozen=True)
class Queue:
    """An `AWS::SQS::Queue` of the template."""

    logical_id: str
    resource: Mapping[str, Any]

    @property
    def properties(self) -> Mapping[str, Any]:
        return self.resource.get("Properties") or {}

    @property
    def visibility_timeout(self) -> int | None:
        return literal_int(self.properties.get("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT))

    @property
    def message_retention(self) -> int | None:
        return literal_int(self.properties.get("MessageRetentionPeriod", DEFAULT_MESSAGE_RETENTION))

    @property
    def redrive_policy(self) -> Mapping[str, Any] | None:
        policy = self.properties.get("RedrivePolicy")
        return policy if isinstance(policy, Mapping) else None

    @property
    def dead_letter_queue(self) -> str | None:
        """The logical id the RedrivePolicy's deadLetterTargetArn names (`!GetAtt <Queue>.Arn`)."""
        policy = self.redrive_policy
        return None if policy is None else resource_id(policy.get("deadLetterTargetArn"))

    @property
    def max_receive_count(self) -> int | None:
        policy = self.redrive_policy
        return None if policy is None else literal_int(policy.get("maxReceiveCount"))

    @property
    def retained(self) -> bool:
        return self.resource.get("DeletionPolicy") == "Retain" and self.resource.get("UpdateReplacePolicy") == "Retain"


@dataclass(frozen=True)
class EventSourceMapping:
    """An `AWS::Lambda::EventSourceMapping`: Lambda polls `queue` and invokes `function` with batches."""

    logical_id: str
    properties: Mapping[str, Any]

    @property
    def function(self) -> str | None:
        """The logical id `FunctionName: !Ref <Function>` (or `!GetAtt <Function>.Arn`) names."""
        return resource_id(self.properties.get("FunctionName"))

    @property
    def source(self) -> str | None:
        """The logical id `EventSourceArn: !GetAtt <Queue>.Arn` names."""
        return resource_id(self.properties.get("EventSourceArn"))

    @property
    def enabled(self) -> bool:
        return self.properties.get("Enabled", True) not in (False, "false", "False")

    @property
    def batch_size(self) -> int | None:
        return literal_int(self.properties.get("BatchSize", DEFAULT_SQS_BATCH_SIZE))

    @property
    def batching_window(self) -> int | None:
        return literal_int(self.properties.get("MaximumBatchingWindowInSeconds", 0))

    @property
    def function_response_types(self) -> list[str]:
        value = self.properties.get("FunctionResponseTypes") or []
        return [str(item) for item in value] if isinstance(value, list) else []

    @property
    def maximum_concurrency(self) -> int | None:
        scaling = self.properties.get("ScalingConfig")
        if not isinstance(scaling, Mapping) or "MaximumConcurrency" not in scaling:
            return None
        return literal_int(scaling["MaximumConcurrency"])
