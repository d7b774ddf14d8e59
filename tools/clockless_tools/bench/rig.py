"""A fanned-out tick on the embedded server, as deployed: the job's work queue and its DLQ on moto's
SQS, the coordinator delivered through the kit (claim, `SendMessageBatch`, completion), and
workers draining the queue the way Lambda's SQS poller feeds them (one message per invocation,
`ReportBatchItemFailures`: a failed message stays and comes back).

The poller's own requests (`ReceiveMessage`, `DeleteMessage`, and the `ChangeMessageVisibility`
that shows a failed message again) are Lambda's, not the function's: they are counted apart
(`POLLER_OPERATIONS`). The worker's own `ChangeMessageVisibility` (every run holds its message only
until its attempt is over: clockless.fanout.redelivery) is the function's, and counted with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clockless import Tick
from clockless.fanout.settings import WorkerSettings
from clockless.throttle import SystemClock
from clockless_tools.bench.harness import Harness, partitions_sent
from clockless_tools.bench.meter import Measured, measure
from clockless_tools.bench.results import BenchError
from clockless_tools.local.dynamodb import patched_environ
from clockless_tools.local.runtime import LocalLambdaContext
from clockless_tools.template.model import Template

POLLER_OPERATIONS: Final = frozenset({"ReceiveMessage", "DeleteMessage"})
# The poller's one request of the worker's kind: a failed message shown again (one per failed run).
POLLER_VISIBILITY: Final = "ChangeMessageVisibility"
WORKER_TIMEOUT_SECONDS: Final = 300  # SPEC-16's worker Timeout
MAX_FAILED_RUNS: Final = 20
# An idle poller asks again after this (Lambda's poller long-polls; moto's server would spin).
IDLE_POLL_SECONDS: Final = 0.05
Handler = Callable[[Any, Any], Any]


def _worker_module(job: str) -> str:
    return f"{job.replace('-', '_')}.worker"


@dataclass
class FanOutRig:
    """One job's coordinator and worker, as the template declares them, on the harness's queues."""

    harness: Harness
    job: str
    concurrency: int | None = None  # WORK_CONCURRENCY; None: the template's
    # more of the worker's environment
    settings: Mapping[str, str] = field(default_factory=dict)
    # CPU the pollers' threads spent in the last drain: the workers' own (with one lane each,
    # all of a worker's client work), not moto's server's.
    client_cpu_seconds: float = field(init=False, default=0.0)
    # runs in the last drain whose message failed (on Lambda: back after the visibility timeout)
    failed_runs: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.sqs = self.harness.sqs
        self.queue_url, self.dlq_url = self.harness.work_queues[self.job]
        self.function_id = self.harness.functions[self.job]
        self.worker_id = worker_function(self.harness.template, self.job)
        self.coordinator: Handler = self.harness.runtime.handler(self.function_id)
        self.worker: Handler = self.harness.runtime.handler(self.worker_id)
        runner = getattr(self.worker, "clockless_runner", None)
        if runner is not None:
            # New workers for each measured tick, as after a deploy: a worker keeps each
            # partition's pacing across its invocations, and a clock of its own starts it afresh
            # with the settings of this tick's environment.
            runner.clock = SystemClock()

    def environment(self) -> dict[str, str]:
        """The worker function's environment (a superset of its coordinator's), with the queues."""
        env = self.harness.runtime.environment(self.function_id)
        env.update(self.harness.runtime.environment(self.worker_id))
        env.update(self.harness.work_environment(self.job))
        if self.concurrency is not None:
            env["WORK_CONCURRENCY"] = str(self.concurrency)
        env.update(self.settings)
        return env

    def worker_settings(self) -> WorkerSettings:
        """The kit's settings of the worker, from the environment it runs in here."""
        return WorkerSettings.from_env(self.environment())

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with patched_environ(self.environment()):
            yield

    def context(self) -> LocalLambdaContext:
        return self.harness.runtime.context(self.worker_id)

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
                    if idle and not self._delayed():
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
        self.failed_runs = len(failures)
        if errors:
            raise BenchError(f"{self.job}: a worker failed: {errors[0]!r}") from errors[0]
        return invocations

    def _delayed(self) -> int:
        """Messages sent with a delay (a continuation) not visible yet: the drain waits for them."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessagesDelayed", 0))

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
        """Nothing left in the queues for the next measurement (new queues, empty)."""
        self.harness.reset_queues()


def worker_function(template: Template, job: str) -> str:
    """The logical id of the job's worker: the function declaring `worker_of` its coordinator."""
    workers = sorted(template.workers_of(template.function_for_job(job).logical_id))
    if len(workers) != 1:
        raise BenchError(f"{job}: expected one worker function in template.yaml, found {workers}")
    return workers[0]


def worker_concurrency(template: Template, job: str) -> int:
    """How many workers Lambda runs at once for the job: its mapping's MaximumConcurrency."""
    mappings = template.mappings_of(worker_function(template, job))
    limits = [int((esm.properties.get("ScalingConfig") or {}).get("MaximumConcurrency", 0)) for esm in mappings]
    if len(limits) != 1 or not limits[0]:
        raise BenchError(f"{job}: the worker's event source mapping sets no ScalingConfig MaximumConcurrency")
    return limits[0]


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


@dataclass(frozen=True, slots=True)
class TickRun:
    """A whole fanned-out tick: the coordinator, then every partition run to the finisher."""

    measured: Measured  # requests of the function (coordinator + workers) and the poller's
    invocations: int
    ledger: dict[str, Any]
    failed_runs: int = 0  # each made the poller show its message again (one ChangeMessageVisibility)

    @property
    def operations(self) -> dict[str, int]:
        """The functions' own requests: all but the SQS poller's, which Lambda makes."""
        own = {name: n for name, n in self.measured.operations.items() if name not in POLLER_OPERATIONS}
        if POLLER_VISIBILITY in own:
            own[POLLER_VISIBILITY] -= self.failed_runs
        return {name: n for name, n in own.items() if n}

    @property
    def requests(self) -> int:
        return sum(self.operations.values())

    @property
    def poller_requests(self) -> int:
        return self.measured.requests - self.requests

    @property
    def read_units(self) -> float:
        return self.measured.read_units

    @property
    def seconds(self) -> float:
        return self.measured.seconds

    @property
    def applied(self) -> int:
        return int((self.ledger.get("summary") or {}).get("applied", -1))


def run_whole_tick(
    harness: Harness, job: str, *, workers: int, concurrency: int | None = None, write_units: bool = False
) -> TickRun:
    """The bench's tick of `job` on the seeded tables, coordinator to finisher, `workers` at once;
    a tick that does not end `succeeded` is a bench error."""
    rig = FanOutRig(harness, job, concurrency=concurrency)
    invocations: list[int] = []

    def tick() -> None:
        partitions_sent(job, rig.start())
        invocations.append(rig.drain(workers))

    try:
        with rig.active():
            measured = measure(
                tick, bookkeeping_tables=harness.bookkeeping_tables, write_units=write_units, allow_other_services=True
            )
        ledger = counters_of(rig.tick_entry())
    finally:
        rig.close()
    if ledger["status"] != "succeeded":
        raise BenchError(f"{job}: the fanned-out tick ended {ledger}")
    return TickRun(measured, invocations[0], ledger, rig.failed_runs)
