"""The template model's queues, event source mappings and workers read as AWS would create them:
SQS's and Lambda's defaults where a property is left out, None where a value is not literal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template
from clockless_tools.template.queues import EventSourceMapping, Queue, resource_id


def _template(resources: dict[str, Any]) -> Template:
    return Template(path=Path("template.yaml"), document={"Resources": resources})


def test_the_projects_workers_read_their_queues_and_mappings(template: Template) -> None:
    # Every worker of the template, whatever the jobs: read as its resources write it.
    assert template.worker_functions, "the template declares no fanned-out job to read"
    for worker_id, worker in template.worker_functions.items():
        coordinator = worker.worker_of
        assert coordinator in template.scheduled_functions
        assert template.workers_of(coordinator) == {worker_id: worker}
        job = template.functions[coordinator].schedules[0].job
        queue = template.work_queue_for_job(job)
        written = template.resources[queue.logical_id]["Properties"]
        assert (queue.visibility_timeout, queue.max_receive_count) == (
            written["VisibilityTimeout"],
            written["RedrivePolicy"]["maxReceiveCount"],
        )
        assert queue.dead_letter_queue == written["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        assert queue.retained
        (mapping,) = template.mappings_of(worker_id)
        mapped = template.resources[mapping.logical_id]["Properties"]
        assert (mapping.source, mapping.batch_size, mapping.maximum_concurrency) == (
            queue.logical_id,
            mapped["BatchSize"],
            mapped["ScalingConfig"]["MaximumConcurrency"],
        )
        assert mapping.function_response_types == ["ReportBatchItemFailures"]


def test_a_queue_and_a_mapping_left_at_their_defaults_read_as_aws_creates_them() -> None:
    queue = Queue("Q", {"Type": "AWS::SQS::Queue"})
    mapping = EventSourceMapping("M", {"EventSourceArn": {"Fn::GetAtt": ["Q", "Arn"]}, "FunctionName": {"Ref": "F"}})

    assert (queue.visibility_timeout, queue.message_retention, queue.dead_letter_queue) == (30, 345600, None)
    assert not queue.retained
    assert (mapping.source, mapping.function, mapping.batch_size, mapping.batching_window) == ("Q", "F", 10, 0)
    assert (mapping.maximum_concurrency, mapping.function_response_types, mapping.enabled) == (None, [], True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"Ref": "Queue"}, "Queue"),
        ({"Fn::GetAtt": ["Queue", "Arn"]}, "Queue"),
        ({"Fn::GetAtt": ["Queue", "QueueName"]}, None),
        ("arn:aws:sqs:us-east-1:123456789012:q", None),
        ({"Fn::Sub": "${Queue.Arn}"}, None),
    ],
)
def test_a_resource_is_named_only_by_ref_or_its_arn(value: Any, expected: str | None) -> None:
    assert resource_id(value) == expected


def test_values_that_are_not_literal_read_as_unknown_not_as_a_guess() -> None:
    queue = Queue(
        "Q",
        {"Properties": {"VisibilityTimeout": {"Ref": "P"}, "RedrivePolicy": {"maxReceiveCount": "five"}}},
    )
    mapping = EventSourceMapping("M", {"BatchSize": True, "ScalingConfig": {"MaximumConcurrency": "16"}})

    assert (queue.visibility_timeout, queue.max_receive_count) == (None, None)
    assert (mapping.batch_size, mapping.maximum_concurrency) == (None, 16)


def test_a_job_without_one_work_queue_is_named_in_the_error() -> None:
    template = _template(
        {
            "Coordinator": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "Events": {"Tick": {"Type": "ScheduleV2", "Properties": {"Input": '{"job": "nightly"}'}}}
                },
            },
        }
    )

    with pytest.raises(TemplateError, match=r"job 'nightly': expected one work queue .* found 0"):
        template.work_queue_for_job("nightly")
