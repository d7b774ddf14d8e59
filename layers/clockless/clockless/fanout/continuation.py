"""Continuing a partition in a later run (a continuation: the same message, one hop on).

It is sent after the time budget (at once), after throttling that outlasted it (after a growing
delay), or when even its lease or the finisher stayed throttled.

A handed-on message is always reported processed: the continuation carries the work, so a
throttled partition costs seconds to a minute, never a visibility timeout, and never reaches
the DLQ. docs/fan-out.md ("Throttling") has the fault model of each step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clockless.fanout.queue import SQS_MAX_DELAY_SECONDS, WorkQueue
from clockless.fanout.retry import continuation_delay
from clockless.throttle import Budget, BudgetSpent, remaining_ms

if TYPE_CHECKING:
    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.store import PartitionStore
    from clockless.fanout.types import Lease


@dataclass
class HandOff:
    """Continuations of one job's partitions, on its work queue. A throttled send is waited out
    within `budget` (the attempt's time); past it, the send raises and the message being handled
    stays on the queue (reported failed), so nothing is lost, at the cost of its visibility timeout."""

    queue: WorkQueue
    budget: Budget

    def send(self, message: WorkMessage, delay_s: int = 0) -> None:
        """The partition's next hop, visible after `delay_s` seconds."""
        self.resend(message.continuation(), delay_s)

    def resend(self, message: WorkMessage, delay_s: int) -> None:
        """`message` as it is (a replay throttled past its budget), visible after `delay_s` seconds."""
        self.queue.send(message.body(), budget=self.budget, delay_s=delay_s)

    def after_budget(
        self, message: WorkMessage, *, final: PartitionStore, cursor: dict[str, Any], already_done: int
    ) -> None:
        """The time budget spent after a page: the cursor, the page's already-done count and the
        lease released in one write, then the next hop at once."""
        final.hand_on(cursor, already_done=already_done)
        self.send(message)

    def after_throttle(
        self,
        message: WorkMessage,
        *,
        final: PartitionStore,
        cursor: dict[str, Any] | None,
        already_done: int,
        lease: Lease,
        spent: BudgetSpent,
        budget: Budget,
    ) -> str:
        """Throttled past the budget: the cursor stored (when a page moved it: `cursor`, with that
        page's `already_done`; None keeps the stored one), the lease released and the reason noted
        in one write, then a continuation after a growing delay. What was noted (`last_error`).

        The order keeps the fault model: dying before the write leaves this message to come back
        (the lease runs out with the attempt); dying between the write and the send does the
        same, from the stored cursor; a continuation sent twice finds the lease held or free, and
        every write is conditional, so each item is applied once whichever copy runs."""
        delay = continuation_delay(lease.throttle_continuations)
        note = f"throttled: {spent.description}, continued after {delay} s"
        try:
            final.hand_on(
                cursor,
                already_done=already_done,
                last_error=note,
                throttle_continuations=lease.throttle_continuations + 1,
            )
        except BudgetSpent:
            # The release itself stayed throttled: the lease runs out with this attempt, so the
            # continuation waits until then (the cursor stored after the last page is where it
            # resumes; the items after it that were applied have left the index).
            left = math.ceil(remaining_ms(budget.context) / 1000) + 1
            delay = min(SQS_MAX_DELAY_SECONDS, max(delay, left))
            note = f"throttled: {spent.description}, lease left to expire, continued after {delay} s"
        self.send(message, delay)
        return note
