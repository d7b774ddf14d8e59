"""The template's AWS::Lambda::EventSourceMapping resources on SQS queues, and the two halves of the
contract Lambda's SQS poller keeps with a function: the event it sends (the `Records` shape of an
SQS event) and how it reads the answer (`ReportBatchItemFailures`).

Lambda's rules for the answer (the Lambda developer guide, "Handling errors for an SQS event
source"): without `ReportBatchItemFailures` any return is a success for the whole batch; with it,
no answer, an empty object or an empty/null `batchItemFailures` is a success, each listed
`itemIdentifier` a failure of that message, and anything it cannot read (not an object, an entry
without a string `itemIdentifier`, an empty one, one that names no message of the batch) fails
the whole batch. A function error fails the whole batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.local.queues import QueueSpec, queue_specs
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template
from clockless_tools.template.queues import DEFAULT_SQS_BATCH_SIZE, QUEUE_TYPE

REPORT_BATCH_ITEM_FAILURES: Final = "ReportBatchItemFailures"
_FUNCTION_TYPES: Final = ("AWS::Serverless::Function", "AWS::Lambda::Function")


@dataclass(frozen=True)
class SqsEventSource:
    """One event source mapping from an SQS queue of the template to a function of the template."""

    logical_id: str
    function_id: str
    queue: QueueSpec
    batch_size: int = DEFAULT_SQS_BATCH_SIZE
    report_batch_item_failures: bool = False
    maximum_concurrency: int | None = None
    enabled: bool = True


def _bounded(logical_id: str, field: str, value: Any, number: int | None, *, low: int, high: int) -> int:
    """A whole number the poller can follow, or a clear error naming the field."""
    if number is None:
        raise TemplateError(f"{logical_id}: {field} must be a whole number, not {value!r}")
    if not low <= number <= high:
        raise TemplateError(f"{logical_id}: {field} {number} is outside {low}..{high}")
    return number


def sqs_event_sources(template: Template, names: LocalNames = LocalNames()) -> list[SqsEventSource]:
    """Every event source mapping whose source is a queue of the template (others are not emulated)."""
    queues = queue_specs(template, names)
    found = []
    for logical_id, mapping in sorted(template.event_source_mappings.items()):
        properties = mapping.properties
        source = mapping.source
        if source is not None and (template.resources.get(source) or {}).get("Type") not in (None, QUEUE_TYPE):
            continue  # a stream or another engine: not emulated
        if source not in queues:
            raise TemplateError(
                f"{logical_id}: EventSourceArn must be !GetAtt <Queue>.Arn of a queue of the template, "
                f"not {properties.get('EventSourceArn')!r}"
            )
        function = mapping.function
        if (template.resources.get(function or "") or {}).get("Type") not in _FUNCTION_TYPES:
            raise TemplateError(
                f"{logical_id}: FunctionName must name a function of the template (!Ref or !GetAtt .Arn), "
                f"not {properties.get('FunctionName')!r}"
            )
        scaling = properties.get("ScalingConfig")
        concurrency = None
        if isinstance(scaling, Mapping) and "MaximumConcurrency" in scaling:
            concurrency = _bounded(
                logical_id,
                "ScalingConfig.MaximumConcurrency",
                scaling["MaximumConcurrency"],
                mapping.maximum_concurrency,
                low=2,
                high=1000,
            )
        found.append(
            SqsEventSource(
                logical_id=logical_id,
                function_id=str(function),
                queue=queues[source],
                batch_size=_bounded(
                    logical_id, "BatchSize", properties.get("BatchSize"), mapping.batch_size, low=1, high=10000
                ),
                report_batch_item_failures=REPORT_BATCH_ITEM_FAILURES in mapping.function_response_types,
                maximum_concurrency=concurrency,
                enabled=mapping.enabled,
            )
        )
    return found


def fed_by(template: Template, function_id: str) -> list[SqsEventSource]:
    """The mappings from the queues a function's environment names (`!Ref <Queue>`): how the work
    it sends reaches its workers."""
    environment = template.function(function_id).environment.values()
    queues = {value["Ref"] for value in environment if isinstance(value, Mapping) and "Ref" in value}
    return [source for source in sqs_event_sources(template) if source.queue.logical_id in queues]


def worker_functions(template: Template, function_id: str) -> list[str]:
    """The functions fed by the queues a function names, and by the queues those name in turn:
    a fanned-out job's workers."""
    found: list[str] = []
    pending = [function_id]
    while pending:
        for source in fed_by(template, pending.pop()):
            if source.function_id not in found and source.function_id != function_id:
                found.append(source.function_id)
                pending.append(source.function_id)
    return found


def sqs_record(message: Mapping[str, Any], *, queue_arn: str, region: str) -> dict[str, Any]:
    """A received SQS message as a record of the SQS event Lambda sends."""
    attributes = {
        name: str(value)
        for name, value in (message.get("Attributes") or {}).items()
        if name not in ("AWSTraceHeader",) or value
    }
    message_attributes = {
        name: {
            "stringValue": value.get("StringValue"),
            "binaryValue": value.get("BinaryValue"),
            "stringListValues": list(value.get("StringListValues") or []),
            "binaryListValues": list(value.get("BinaryListValues") or []),
            "dataType": value.get("DataType"),
        }
        for name, value in (message.get("MessageAttributes") or {}).items()
    }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def failed_message_ids(
    response: Any, message_ids: Sequence[str], *, report_batch_item_failures: bool
) -> tuple[set[str], str | None]:
    """The messages of a batch Lambda leaves on the queue after the function returned `response`,
    and why the whole batch counts as failed when it does (None otherwise)."""
    if not report_batch_item_failures or response is None:
        return set(), None
    if not isinstance(response, Mapping):
        return set(message_ids), f"the answer is not an object but {type(response).__name__}"
    failures = response.get("batchItemFailures")
    if not failures:
        return set(), None
    if not isinstance(failures, list):
        return set(message_ids), "batchItemFailures is not a list"
    failed = set()
    for entry in failures:
        identifier = entry.get("itemIdentifier") if isinstance(entry, Mapping) else None
        if not isinstance(identifier, str) or not identifier or identifier not in message_ids:
            return set(message_ids), f"batchItemFailures entry {entry!r} names no message of the batch"
        failed.add(identifier)
    return failed, None
