"""A fanned-out tick on the embedded server, as deployed: the job's work queue and its DLQ on moto's
SQS, the coordinator delivered through the kit (claim, `SendMessageBatch`, completion), and
workers draining the queue the way Lambda's SQS poller feeds them (one message per invocation,
`ReportBatchItemFailures`: a failed message stays and comes back).

The poller's own requests (`ReceiveMessage`, `DeleteMessage`, `ChangeMessageVisibility`) are
Lambda's, not the function's: they are counted apart (`POLLER_OPERATIONS`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clockless import ScheduledJob, Tick
from clockless.fanout import FanOut
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.rawwork import RawWork
from clockless_tools.bench.results import BenchError
from clockless_tools.local.dynamodb import local_client, patched_environ
from clockless_tools.local.runtime import LocalLambdaContext

POLLER_OPERATIONS: Final = frozenset({"ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility"})
WORKER_TIMEOUT_SECONDS: Final = 300  # SPEC-16's worker Timeout
MAX_FAILED_RUNS: Final = 20
# An idle poller asks again after this (Lambda's poller long-polls; moto's server would spin).
IDLE_POLL_SECONDS: Final = 0.05
Handler = Callable[[Any, Any], Any]


def _worker_module(job: str) -> str:
    return f"{job.replace('-', '_')}.worker"


@dataclass
class FanOutRig:
    harness: Harness
    job: str
    concurrency: int = 4  # WORK_CONCURRENCY
    page_size: int | None = None  # WORK_PAGE_SIZE; None: the kit's default
    sqs: Any = field(init=False)
    queue_url: str = field(init=False)
    dlq_url: str = field(init=False)
    uses_job_code: bool = field(init=False)
    # CPU the pollers' threads spent in the last drain: the workers' own (with one lane each,
    # all of a worker's client work), not moto's server's.
    client_cpu_seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.sqs = local_client("sqs", self.harness.endpoint)
        name = f"bench-{self.job}-work-{uuid.uuid4().hex[:6]}"
        self.dlq_url = self.sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
        self.queue_url = self.sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "1800"})["QueueUrl"]
        self.function_id = self.harness.functions[self.job]
        # The jobs' own worker modules once they exist; until then the kit's FanOut over RawWork.
        self.uses_job_code = importlib.util.find_spec(_worker_module(self.job)) is not None
        if self.uses_job_code:
            self.coordinator: Handler = self.harness.runtime.handler(self.function_id)
            self.worker: Handler = importlib.import_module(_worker_module(self.job)).lambda_handler
        else:
            self.coordinator, self.worker = self._kit_over_raw_work()

    def _kit_over_raw_work(self) -> tuple[Handler, Handler]:
        job = ScheduledJob(self.job)
        raw = RawWork(self.harness, self.job)
        work = FanOut(job, partitions=[str(shard) for shard in range(raw.shards)])
        business_date = self.harness.layout.business_date.isoformat()

        @job.handler
        def coordinator(run: Any) -> Mapping[str, Any]:
            return work.start(run, params={"business_date": business_date})

        return coordinator, work.worker(lambda: raw)

    def environment(self) -> dict[str, str]:
        env = self.harness.runtime.environment(self.function_id)
        env.update(
            {
                "AWS_ENDPOINT_URL_SQS": self.harness.endpoint,
                "WORK_QUEUE_URL": self.queue_url,
                "WORK_DEAD_LETTER_QUEUE_URL": self.dlq_url,
                "WORK_CONCURRENCY": str(self.concurrency),
                "WORK_TIME_BUDGET_SECONDS": "30",
            }
        )
        if self.page_size is not None:
            env["WORK_PAGE_SIZE"] = str(self.page_size)
        return env

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with patched_environ(self.environment()):
            yield

    def context(self) -> LocalLambdaContext:
        name = f"bench-{self.function_id}"
        return LocalLambdaContext(name, 1024, WORKER_TIMEOUT_SECONDS, f"arn:aws:lambda:us-east-1:123456789012:{name}")

    def start(self, tick: Tick | None = None) -> Any:
        """The tick (the bench's, by default) delivered to the coordinator, inside `active`."""
        return self.coordinator((tick or self.harness.tick(self.job)).to_event(), self.context())

    def drain(self, workers: int) -> int:
        """`workers` concurrent pollers until the queue is empty and no worker runs; the
        invocations made. A failed message is made visible again at once (a bench has no time
        to wait out the visibility timeout) and counts against a cap."""
        busy = 0  # pollers running a message: until none is, a continuation may still come
        invocations = 0
        failures: list[str] = []
        lock = threading.Lock()

        def poll() -> None:
            nonlocal busy, invocations
            while True:
                received = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=1)
                messages = received.get("Messages") or []
                if not messages:
                    with lock:
                        idle = busy == 0
                    if idle:
                        return
                    time.sleep(IDLE_POLL_SECONDS)
                    continue
                with lock:
                    busy += 1
                try:
                    failed = self._invoke(messages[0])
                finally:
                    with lock:
                        invocations += 1
                        busy -= 1
                if failed:
                    with lock:
                        failures.append(failed)
                        if len(failures) > MAX_FAILED_RUNS:
                            raise BenchError(f"{self.job}: workers keep failing messages: {failures[-3:]}")

        errors: list[BaseException] = []
        self.client_cpu_seconds = 0.0

        def guarded() -> None:
            started = time.thread_time()
            try:
                poll()
            except BaseException as error:
                errors.append(error)
            finally:
                with lock:
                    self.client_cpu_seconds += time.thread_time() - started

        threads = [threading.Thread(target=guarded, name=f"bench-poller-{n}") for n in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise BenchError(f"{self.job}: a worker failed: {errors[0]!r}") from errors[0]
        return invocations

    def _invoke(self, message: Mapping[str, Any]) -> str | None:
        """One invocation; as the poller does, a reported failure leaves the message in the queue
        (visible again at once: a bench does not wait out the visibility timeout). The failed
        message's id, or None."""
        response = self.worker(_sqs_event(message, self.queue_url), self.context())
        if response.get("batchItemFailures"):
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
            return str(message["MessageId"])
        self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return None

    def tick_entry(self) -> dict[str, Any]:
        tick = self.harness.tick(self.job)
        job, _, scheduled_time = tick.key.partition("@")
        item = self.harness.client.get_item(
            TableName=self.harness.ledger_table,
            Key={"job": {"S": job}, "scheduled_time": {"S": scheduled_time}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            raise BenchError(f"{self.job}: no ledger entry for {tick.key}")
        return dict(item)

    def close(self) -> None:
        for url in (self.queue_url, self.dlq_url):
            with contextlib.suppress(Exception):
                self.sqs.delete_queue(QueueUrl=url)


def _sqs_event(message: Mapping[str, Any], queue_url: str) -> dict[str, Any]:
    """The event Lambda's SQS poller hands a function: one record per message."""
    body = message["Body"]
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(int(time.time() * 1000))},
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:{queue_url.rsplit('/', 1)[-1]}",
                "awsRegion": "us-east-1",
            }
        ]
    }


def counters_of(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The tick entry's status and summary, as the finisher wrote them."""
    summary = entry.get("summary", {}).get("S")
    return {
        "status": entry.get("status", {}).get("S"),
        "partitions_done": int(entry.get("partitions_done", {}).get("N", 0)),
        "partitions_total": int(entry.get("partitions_total", {}).get("N", 0)),
        "summary": json.loads(summary) if summary else None,
    }
