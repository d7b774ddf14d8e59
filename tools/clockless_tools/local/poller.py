"""Lambda's SQS poller, without Docker: each event source mapping of the template drains its queue
by invoking the function's handler in this process, the way Lambda does.

Per wave, a mapping receives what its queue has visible (up to its concurrency times BatchSize,
with the queue's own visibility timeout), invokes the handler once per batch (batches of one wave
run concurrently), deletes the messages the answer reports as done and leaves the others in
flight. Lambda never makes a failed message visible early: it returns after the queue's visibility
timeout, and moto's redrive moves it to the dead-letter queue on the receive after
maxReceiveCount. The poller keeps its own note of when each message it left in flight becomes
visible again, on its clock, so a caller in simulated time can move to that moment
(`next_visible_at`) and have the message back (`release_due`) whichever clock the server keeps.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from botocore.exceptions import ClientError

from clockless.fanout.retry import redelivery_backoff_text
from clockless_tools.errors import ToolError
from clockless_tools.local.event_sources import SqsEventSource, failed_message_ids, sqs_event_sources, sqs_record
from clockless_tools.local.queues import queue_url, sqs_client
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.intrinsics import LocalNames, resolve

OUTCOME_DONE: Final = "done"  # every message of the batch deleted
OUTCOME_PARTIAL: Final = "partial"  # the answer reported some messages as failed
OUTCOME_ERROR: Final = "error"  # the function failed (or its answer was unreadable): the whole batch stays
# One wave at most this many batches at once when a mapping sets no MaximumConcurrency.
DEFAULT_CONCURRENCY: Final = 4
# A drain that has not emptied its queues after this many invocations is a loop, not work.
DEFAULT_MAX_INVOCATIONS: Final = 20_000
_RECEIVE_MAX: Final = 10


@dataclass(frozen=True)
class Message:
    message_id: str
    body: str
    receive_count: int

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass(frozen=True)
class Invocation:
    """One invocation of a function by a mapping, and what became of its batch."""

    mapping: str
    function_id: str
    queue: str
    messages: tuple[Message, ...]
    outcome: str
    failed: tuple[str, ...] = ()
    error: str | None = None
    # whatever the caller's `invoke` hook returned beside the answer (what it injected, say)
    detail: Any = None


# (function id, event, the batch's messages) -> (the function's answer, detail). Raising is the
# function failing, as in Lambda.
Invoke = Callable[[str, dict[str, Any], Sequence[Message]], tuple[Any, Any]]


class DrainError(ToolError, RuntimeError):
    """The queues did not empty within the invocation limit (a message that keeps coming back)."""


@dataclass
class _InFlight:
    queue_url: str
    visible_at: float


@dataclass
class QueueDepth:
    visible: int
    in_flight: int
    delayed: int = 0

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


@dataclass
class SqsPoller:
    """Drains the template's SQS event source mappings into their functions, in this process."""

    runtime: LocalLambdaRuntime
    endpoint: str
    names: LocalNames = LocalNames()
    clock: Callable[[], float] = time.time
    invoke: Invoke | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    # False: a wave's batches are invoked one after another (a caller that injects faults into
    # whatever the invocation sends, from any thread), still received together.
    parallel: bool = True
    # A mapping this says True of is not polled for now (the simulator's slow night: workers lag).
    held: Callable[[SqsEventSource], bool] | None = None
    sources: list[SqsEventSource] = field(init=False)
    _in_flight: dict[str, _InFlight] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.sources = [s for s in sqs_event_sources(self.runtime.template, self.names) if s.enabled]
        self._client = sqs_client(self.endpoint)
        self._urls = {}
        for source in self.sources:
            try:
                self._urls[source.queue.logical_id] = queue_url(self._client, source.queue.logical_id, self.names)
            except self._client.exceptions.QueueDoesNotExist:
                raise DrainError(
                    f"the server at {self.endpoint} has no queue {source.queue.logical_id}: run `make local-up` "
                    "again, it creates the template's new tables and queues on the running server"
                ) from None

    # ------------------------------------------------------------------------------ time
    def next_visible_at(self) -> float | None:
        """When the first message this poller left in flight is visible again (its clock), if any."""
        with self._lock:
            return min((entry.visible_at for entry in self._in_flight.values()), default=None)

    def release_due(self) -> int:
        """Messages whose visibility timeout has passed on this poller's clock: visible now, even on a
        server whose clock has not moved (a simulated clock). Returns how many."""
        now = self.clock()
        with self._lock:
            due = {handle: entry for handle, entry in self._in_flight.items() if entry.visible_at <= now}
            for handle in due:
                del self._in_flight[handle]
        for handle, entry in due.items():
            # Gone meanwhile (received again, deleted, moved to the dead-letter queue): nothing to do.
            with contextlib.suppress(ClientError):
                self._client.change_message_visibility(
                    QueueUrl=entry.queue_url, ReceiptHandle=handle, VisibilityTimeout=0
                )
        return len(due)

    # ------------------------------------------------------------------------------ polling
    def depth(self) -> dict[str, QueueDepth]:
        """Each polled queue's messages: visible, in flight, delayed."""
        depths = {}
        for queue_id, url in self._urls.items():
            attributes = self._client.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            )["Attributes"]
            depths[queue_id] = QueueDepth(
                visible=int(attributes.get("ApproximateNumberOfMessages", 0)),
                in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
                delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
            )
        return depths

    def drain(self, *, max_invocations: int = DEFAULT_MAX_INVOCATIONS) -> list[Invocation]:
        """Waves until no mapping finds a visible message. Messages left in flight stay there until
        their visibility timeout (`next_visible_at`, `release_due`)."""
        invocations: list[Invocation] = []
        while True:
            wave = self.poll()
            if not wave:
                return invocations
            invocations.extend(wave)
            if len(invocations) > max_invocations:
                raise DrainError(
                    f"the queues did not empty after {len(invocations)} invocations: "
                    f"{', '.join(f'{q} {d.total}' for q, d in self.depth().items())} messages left"
                )

    def poll(self) -> list[Invocation]:
        """One wave: each mapping's visible messages, a batch per invocation, batches concurrently;
        then the messages their answers reported done are deleted (together, ten per request)."""
        invocations: list[Invocation] = []
        for source in self.sources:
            if self.held is not None and self.held(source):
                continue
            batches = list(self._batches(source))
            if not batches:
                continue
            with self.runtime.function_environment(source.function_id):
                if self.parallel:
                    with ThreadPoolExecutor(max_workers=len(batches)) as pool:
                        results = list(pool.map(functools.partial(self._invoke, source), batches))
                else:
                    results = [self._invoke(source, batch) for batch in batches]
            self._delete(self._urls[source.queue.logical_id], [m for _, done in results for m in done])
            invocations.extend(invocation for invocation, _ in results)
        return invocations

    def _batches(self, source: SqsEventSource) -> Iterator[list[dict[str, Any]]]:
        wanted = source.batch_size * min(source.maximum_concurrency or self.concurrency, self.concurrency)
        url = self._urls[source.queue.logical_id]
        received: list[dict[str, Any]] = []
        while len(received) < wanted:
            response = self._client.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(_RECEIVE_MAX, wanted - len(received)),
                # Never the queue's long polling: an empty queue answers at once.
                WaitTimeSeconds=0,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages = response.get("Messages") or []
            if not messages:
                break
            received.extend(messages)
        for start in range(0, len(received), source.batch_size):
            yield received[start : start + source.batch_size]

    def _invoke(self, source: SqsEventSource, batch: list[dict[str, Any]]) -> tuple[Invocation, list[dict[str, Any]]]:
        """Invoke the function with one batch; what became of it, and the messages to delete."""
        queue = source.queue
        url = self._urls[queue.logical_id]
        arn = str(resolve({"Fn::GetAtt": [queue.logical_id, "Arn"]}, self.runtime.template, self.names))
        event = {"Records": [sqs_record(message, queue_arn=arn, region=self.names.region) for message in batch]}
        messages = tuple(
            Message(m["MessageId"], m["Body"], int((m.get("Attributes") or {}).get("ApproximateReceiveCount", 1)))
            for m in batch
        )
        ids = [message.message_id for message in messages]
        detail: Any = None
        error: str | None = None
        try:
            if self.invoke is None:
                response = self.runtime.call(source.function_id, event)
            else:
                response, detail = self.invoke(source.function_id, event, messages)
        except KeyboardInterrupt:
            raise
        except BaseException as failure:  # any way the function dies fails its whole batch, as in Lambda
            failed, error = set(ids), f"{type(failure).__name__}: {failure}"
        else:
            failed, error = failed_message_ids(
                response, ids, report_batch_item_failures=source.report_batch_item_failures
            )
        visible_at = self.clock() + queue.visibility_timeout
        with self._lock:
            for message in batch:
                if message["MessageId"] in failed:
                    self._in_flight[message["ReceiptHandle"]] = _InFlight(url, visible_at)
        outcome = OUTCOME_DONE if not failed else OUTCOME_ERROR if error else OUTCOME_PARTIAL
        invocation = Invocation(
            mapping=source.logical_id,
            function_id=source.function_id,
            queue=queue.logical_id,
            messages=messages,
            outcome=outcome,
            failed=tuple(i for i in ids if i in failed),
            error=error,
            detail=detail,
        )
        return invocation, [m for m in batch if m["MessageId"] not in failed]

    def _delete(self, url: str, messages: Sequence[Mapping[str, Any]]) -> None:
        for start in range(0, len(messages), _RECEIVE_MAX):
            chunk = messages[start : start + _RECEIVE_MAX]
            self._client.delete_message_batch(
                QueueUrl=url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )


def describe_drain(invocations: Sequence[Invocation], poller: SqsPoller) -> list[str]:
    """One line per drained queue: messages, invocations, failures, and where the failed ones are."""
    lines = []
    for source in poller.sources:
        mine = [i for i in invocations if i.mapping == source.logical_id]
        if not mine:
            continue
        failed = sum(len(i.failed) for i in mine)
        errors = sum(1 for i in mine if i.outcome == OUTCOME_ERROR)
        line = (
            f"{source.queue.logical_id} -> {source.function_id}: {sum(len(i.messages) for i in mine)} message(s) "
            f"in {len(mine)} invocation(s)"
        )
        if failed:
            redrive = (
                f", then to {source.queue.dead_letter_queue} after {source.queue.max_receive_count} receives"
                if source.queue.dead_letter_queue
                else ""
            )
            line += (
                f"; {failed} message(s) failed ({errors} function error(s)): back on the queue after the kit's "
                f"backoff ({redelivery_backoff_text()}){redrive}"
            )
        else:
            line += ", all done"
        lines.append(line)
    return lines
