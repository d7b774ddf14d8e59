"""The template's SQS event source mappings as the local poller reads them, and Lambda's rules for a
function's answer to an SQS batch (ReportBatchItemFailures)."""

from __future__ import annotations

from typing import Any

import pytest

from clockless_tools.local.event_sources import failed_message_ids, sqs_event_sources, sqs_record
from clockless_tools.local.queues import queue_specs
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT

IDS = ["m1", "m2"]


def _template(**mapping: Any) -> Template:
    properties = {
        "EventSourceArn": {"Fn::GetAtt": ["WorkQueue", "Arn"]},
        "FunctionName": {"Ref": "Worker"},
        **mapping,
    }
    return Template(
        PROJECT_ROOT / "template.yaml",
        {
            "Resources": {
                "Dlq": {"Type": "AWS::SQS::Queue"},
                "WorkQueue": {
                    "Type": "AWS::SQS::Queue",
                    "Properties": {
                        "VisibilityTimeout": 1800,
                        "SqsManagedSseEnabled": True,
                        "RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": ["Dlq", "Arn"]}, "maxReceiveCount": 5},
                    },
                },
                "Worker": {"Type": "AWS::Serverless::Function", "Properties": {"Handler": "w.handler"}},
                "Mapping": {"Type": "AWS::Lambda::EventSourceMapping", "Properties": properties},
            }
        },
    )


def test_a_mapping_is_read_with_its_queue_and_the_queue_with_its_resolved_redrive_policy() -> None:
    template = _template(
        BatchSize=1, FunctionResponseTypes=["ReportBatchItemFailures"], ScalingConfig={"MaximumConcurrency": 16}
    )

    (source,) = sqs_event_sources(template)

    assert (source.function_id, source.queue.logical_id, source.batch_size) == ("Worker", "WorkQueue", 1)
    assert source.report_batch_item_failures
    assert source.maximum_concurrency == 16
    assert source.enabled
    assert source.queue.visibility_timeout == 1800
    assert source.queue.attributes == {
        "VisibilityTimeout": "1800",
        "SqsManagedSseEnabled": "true",
        "RedrivePolicy": '{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:Dlq", "maxReceiveCount": 5}',
    }
    assert (source.queue.dead_letter_queue, source.queue.max_receive_count) == ("Dlq", 5)


def test_lambdas_defaults_apply_when_the_mapping_leaves_them_out() -> None:
    (source,) = sqs_event_sources(_template())

    assert (source.batch_size, source.report_batch_item_failures, source.maximum_concurrency) == (10, False, None)


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"FunctionName": "worker-by-name"}, "Mapping: FunctionName must name a function of the template"),
        ({"EventSourceArn": "arn:aws:sqs:us-east-1:1:elsewhere"}, "Mapping: EventSourceArn must be !GetAtt <Queue>"),
        ({"BatchSize": 0}, "Mapping: BatchSize 0 is outside 1..10000"),
        ({"BatchSize": "ten"}, "Mapping: BatchSize must be a whole number, not 'ten'"),
        (
            {"ScalingConfig": {"MaximumConcurrency": 1}},
            "Mapping: ScalingConfig.MaximumConcurrency 1 is outside 2..1000",
        ),
    ],
)
def test_a_mapping_the_poller_cannot_follow_is_refused_naming_the_field(mapping: dict[str, Any], message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        sqs_event_sources(_template(**mapping))


def test_a_redrive_policy_must_name_a_queue_of_the_template() -> None:
    template = _template()
    template.resources["WorkQueue"]["Properties"]["RedrivePolicy"] = {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:elsewhere",
        "maxReceiveCount": 5,
    }

    with pytest.raises(
        TemplateError, match=r"WorkQueue: RedrivePolicy needs deadLetterTargetArn: !GetAtt <Queue>\.Arn"
    ):
        queue_specs(template)


@pytest.mark.parametrize(
    ("answer", "failed", "whole_batch"),
    [
        (None, set(), False),
        ({}, set(), False),
        ({"batchItemFailures": []}, set(), False),
        ({"batchItemFailures": None}, set(), False),
        ({"batchItemFailures": [{"itemIdentifier": "m2"}]}, {"m2"}, False),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, set(IDS), True),
        ({"batchItemFailures": [{"itemIdentifier": None}]}, set(IDS), True),
        ({"batchItemFailures": [{"id": "m1"}]}, set(IDS), True),
        ({"batchItemFailures": [{"itemIdentifier": "m9"}]}, set(IDS), True),
        ("ok", set(IDS), True),
    ],
)
def test_lambdas_rules_for_a_partial_batch_response(answer: Any, failed: set[str], whole_batch: bool) -> None:
    found, why = failed_message_ids(answer, IDS, report_batch_item_failures=True)

    assert found == failed
    assert (why is not None) == whole_batch


def test_without_report_batch_item_failures_any_answer_deletes_the_whole_batch() -> None:
    assert failed_message_ids(
        {"batchItemFailures": [{"itemIdentifier": "m1"}]}, IDS, report_batch_item_failures=False
    ) == (
        set(),
        None,
    )


def test_a_received_message_becomes_a_record_of_lambdas_sqs_event() -> None:
    record = sqs_record(
        {
            "MessageId": "m1",
            "ReceiptHandle": "rh",
            "Body": "{}",
            "MD5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
            "Attributes": {"ApproximateReceiveCount": "2", "SentTimestamp": "1"},
            "MessageAttributes": {"kind": {"StringValue": "partition", "DataType": "String"}},
        },
        queue_arn="arn:aws:sqs:us-east-1:123456789012:WorkQueue",
        region="us-east-1",
    )

    assert record == {
        "messageId": "m1",
        "receiptHandle": "rh",
        "body": "{}",
        "attributes": {"ApproximateReceiveCount": "2", "SentTimestamp": "1"},
        "messageAttributes": {
            "kind": {
                "stringValue": "partition",
                "binaryValue": None,
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": "String",
            }
        },
        "md5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:WorkQueue",
        "awsRegion": "us-east-1",
    }
