"""Every request the fan-out makes of SQS.

A tick's partitions in batches of 10, a continuation or a buffered tick's start (delayed or not),
failed items to the work DLQ, and a message being run hidden only until its attempt is over or a
failed one shown again sooner. Each waits out throttles within the budget its caller hands it
(clockless.throttle)."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from clockless.errors import ClocklessError
from clockless.fanout.messages import WorkMessage
from clockless.throttle import Budget, BudgetSpent, backoff_seconds, retry_throttled

if TYPE_CHECKING:
    from clockless.fanout.writer import Entry

# SendMessageBatch takes at most 10 entries.
SQS_BATCH: Final = 10
# SQS takes up to 256 KiB (262,144 bytes) per message; leave room for the envelope.
MAX_BODY_BYTES: Final = 200 * 1024
# SendMessage's DelaySeconds takes 0 to 900 (15 minutes).
SQS_MAX_DELAY_SECONDS: Final = 900


class QueueSendError(ClocklessError, RuntimeError):
    """Some messages could not be sent; the caller fails, and its retry sends them all again."""


class WorkQueue:
    def __init__(self, client: Any, url: str) -> None:
        self.client = client
        self.url = url

    def send(self, body: str, *, budget: Budget, delay_s: int = 0, what: str = "SendMessage") -> None:
        """One message, visible after `delay_s` seconds (at most SQS's 900). A throttled send is
        waited out within `budget`; past it, `BudgetSpent` is the caller's."""
        request: dict[str, Any] = {"QueueUrl": self.url, "MessageBody": body}
        if delay_s > 0:
            request["DelaySeconds"] = min(SQS_MAX_DELAY_SECONDS, delay_s)
        retry_throttled(lambda: self.client.send_message(**request), budget=budget, what=what)

    def show_again(self, receipt_handle: str, after_s: int) -> None:
        """A received message visible again `after_s` seconds from now (instead of after the
        queue's visibility timeout)."""
        self.client.change_message_visibility(
            QueueUrl=self.url, ReceiptHandle=receipt_handle, VisibilityTimeout=after_s
        )

    def send_all(self, bodies: Sequence[str], *, budget: Budget | None = None) -> int:
        """Every body, 10 per request. The SendMessageBatch calls made (a throttled one counted once).

        Within `budget` (the attempt's time, less what its last writes need): a throttled request
        is sent again after backoff (clockless.throttle), and entries SendMessageBatch reports
        failed for SQS's own reasons (`SenderFault` false: throttled, internal) are sent again the
        same way, never dropped; an entry SQS refuses for itself (`SenderFault` true: too large,
        invalid) fails at once, naming it. Still not sent when the budget is spent: QueueSendError
        (the tick's claim is released and its retry sends every partition again; a partition sent
        twice is a duplicate the workers recognise)."""
        budget = budget if budget is not None else Budget(None, 0.0)
        requests = 0
        for start in range(0, len(bodies), SQS_BATCH):
            pending = {str(index): body for index, body in enumerate(bodies[start : start + SQS_BATCH])}
            attempt = 0
            while pending:
                requests += 1
                entries = [{"Id": entry_id, "MessageBody": body} for entry_id, body in pending.items()]
                send = functools.partial(self.client.send_message_batch, QueueUrl=self.url, Entries=entries)
                try:
                    response = retry_throttled(send, budget=budget, what="SendMessageBatch")
                except BudgetSpent as spent:
                    raise QueueSendError(f"{len(pending)} message(s) not sent to {self.url}: {spent}") from spent
                failures = [f for f in response.get("Failed") or [] if f.get("Id") in pending]
                refused = [f for f in failures if f.get("SenderFault")]
                if refused:
                    raise QueueSendError(f"SQS refused {len(refused)} message(s) for {self.url}: {_reasons(refused)}")
                pending = {f["Id"]: pending[f["Id"]] for f in failures}
                if not pending:
                    break
                delay = backoff_seconds(attempt)
                if budget.left_s() < delay:
                    raise QueueSendError(
                        f"{len(pending)} message(s) not sent to {self.url} within the attempt's time: "
                        f"{_reasons(failures)}"
                    )
                budget.clock.sleep(delay)
                attempt += 1
        return requests


def _reasons(failures: Sequence[dict[str, Any]]) -> str:
    return "; ".join(sorted({f"{f.get('Code')}: {f.get('Message')}" for f in failures}))


def split_items(items: Sequence[dict[str, Any]], envelope_bytes: int) -> list[list[dict[str, Any]]]:
    """Items in groups whose message stays under SQS's size limit (an item alone always goes)."""
    groups: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = envelope_bytes
    for item in items:
        item_bytes = len(json.dumps(item, separators=(",", ":")).encode("utf-8")) + 1
        if current and size + item_bytes > MAX_BODY_BYTES:
            groups.append(current)
            current, size = [], envelope_bytes
        current.append(item)
        size += item_bytes
    if current:
        groups.append(current)
    return groups


class DeadLetters:
    """Failed items to the job's work DLQ, as `items` messages a replay can move back. A throttled
    send is waited out within `budget` (the attempt's time). The caller logs each item."""

    def __init__(self, client: Any, url: str, budget: Budget | None = None) -> None:
        self.client = client
        self.url = url
        self.budget = budget if budget is not None else Budget(None, 0.0)

    def send(
        self, message: WorkMessage, encode: Callable[[Any], dict[str, Any]], entries: list[Entry], reason: str
    ) -> None:
        """The entries as `items` messages: each failed item's key and failure, and the item itself
        where it decoded (a row that did not has only its key: a replay reads it again)."""
        envelope = len(message.failed_items([], reason).body().encode("utf-8"))
        for group in split_items([_letter(entry, encode) for entry in entries], envelope):
            body = message.failed_items(
                [letter["item"] for letter in group if "item" in letter],
                reason,
                keys=[letter["key"] for letter in group],
                failures=[letter["failure"] for letter in group if "failure" in letter],
            ).body()
            send = functools.partial(self.client.send_message, QueueUrl=self.url, MessageBody=body)
            retry_throttled(send, budget=self.budget, what="SendMessage to the work DLQ")


def _letter(entry: Entry, encode: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    letter: dict[str, Any] = {"key": entry.key}
    if entry.failure is not None:
        letter["failure"] = entry.failure.as_record()
    if entry.item is not None:
        # An item that cannot be encoded is replayed from its key all the same (its row read again).
        with contextlib.suppress(Exception):
            letter["item"] = encode(entry.item)
    return letter
