"""A fanned-out job's work queues on the embedded server, and a drain that hands their messages to
the worker handler one at a time, as the event source mapping does with BatchSize 1."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clockless_tools.local.dynamodb import LOCAL_REGION, local_client
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template


@dataclass
class WorkQueues:
    """The job's work queue and its dead-letter queue, by logical id, on the embedded server."""

    runtime: LocalLambdaRuntime
    worker: str
    queue: str
    dead_letter_queue: str
    client: Any = field(init=False)
    # What each worker invocation answered, in order.
    answers: list[dict[str, Any]] = field(default_factory=list)
    _urls: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client = local_client("sqs", self.runtime.endpoint)
        for name in (self.queue, self.dead_letter_queue):
            self.client.create_queue(QueueName=name)

    @classmethod
    def of_job(cls, runtime: LocalLambdaRuntime, template: Template, job: str) -> WorkQueues:
        """The job's worker, the queue its event source mapping reads and that queue's DLQ."""
        queue = template.work_queue_for_job(job)
        (mapping,) = (m for m in template.event_source_mappings.values() if m.source == queue.logical_id)
        assert mapping.function is not None
        assert queue.dead_letter_queue is not None
        return cls(runtime, mapping.function, queue.logical_id, queue.dead_letter_queue)

    def url(self, logical_id: str) -> str:
        if logical_id not in self._urls:
            self._urls[logical_id] = str(self.client.get_queue_url(QueueName=logical_id)["QueueUrl"])
        return self._urls[logical_id]

    def bodies(self, logical_id: str) -> list[dict[str, Any]]:
        """The messages waiting in a queue (left there: they are received, then made visible again)."""
        received: list[dict[str, Any]] = []
        while batch := self._receive(logical_id, 10, visibility=600):
            received.extend(batch)
        for message in received:
            self.client.change_message_visibility(
                QueueUrl=self.url(logical_id), ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        return [json.loads(message["Body"]) for message in received]

    def drain(self, before_each: Callable[[dict[str, Any]], None] | None = None, limit: int = 500) -> int:
        """Run the worker on every message of the work queue until it is empty; the invocations.
        A message the worker reports as failed, or whose invocation raised, stays in flight (as it would for the queue's
        visibility timeout) and is not retried here."""
        invocations = 0
        while True:
            messages = self._receive(self.queue, 1, visibility=1800)
            if not messages:
                return invocations
            (message,) = messages
            invocations += 1
            assert invocations <= limit, "the work queue does not empty"
            if before_each is not None:
                before_each(json.loads(message["Body"]))
            try:
                answer = self.runtime.call(self.worker, self.event(message))
            except Exception as error:  # the function failed: Lambda leaves the whole batch to SQS
                answer = {"error": f"{type(error).__name__}: {error}"}
            self.answers.append(answer)
            if "error" not in answer and not answer.get("batchItemFailures"):
                self.client.delete_message(QueueUrl=self.url(self.queue), ReceiptHandle=message["ReceiptHandle"])

    def delete(self) -> None:
        for name in (self.queue, self.dead_letter_queue):
            self.client.delete_queue(QueueUrl=self.url(name))

    def _receive(self, logical_id: str, count: int, *, visibility: int) -> list[dict[str, Any]]:
        answer = self.client.receive_message(
            QueueUrl=self.url(logical_id),
            MaxNumberOfMessages=count,
            VisibilityTimeout=visibility,
            AttributeNames=["All"],
        )
        return list(answer.get("Messages", []))

    def event(self, message: dict[str, Any]) -> dict[str, Any]:
        """The SQS event Lambda hands the worker for one received message."""
        names = LocalNames()
        return {
            "Records": [
                {
                    "messageId": message["MessageId"],
                    "receiptHandle": message["ReceiptHandle"],
                    "body": message["Body"],
                    "attributes": message.get("Attributes", {}),
                    "messageAttributes": {},
                    "md5OfBody": hashlib.md5(message["Body"].encode()).hexdigest(),
                    "eventSource": "aws:sqs",
                    "eventSourceARN": f"arn:aws:sqs:{LOCAL_REGION}:{names.account_id}:{self.queue}",
                    "awsRegion": LOCAL_REGION,
                }
            ]
        }
