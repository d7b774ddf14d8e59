"""Handing a partition on to a later run: after the time budget (at once), after throttling that
outlasted it (after a growing delay), or when even its lease or the finisher stayed throttled.

A handed-on message is always reported processed: the continuation carries the work, so a
throttled partition costs seconds to a minute, never a visibility timeout, and never reaches
the DLQ. docs/fan-out.md ("Throttling") has the fault model of each step.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Final

from clockless.fanout.messages import WorkMessage
from clockless.fanout.records import Lease, PartitionRecords
from clockless.throttle import Budget, BudgetSpent, remaining_ms, retry_throttled

# The last writes of a run (the release, the done transaction, the finisher) may wait out
# throttles until this close to the attempt's end; the work itself stops at the time budget.
FINAL_MARGIN_SECONDS: Final = 3.0
# A throttled partition comes back after about 5, 10, 20, 40, then 60 s (half of it jittered),
# so partitions throttled together do not come back together.
CONTINUATION_DELAY_BASE_SECONDS: Final = 5
CONTINUATION_DELAY_CAP_SECONDS: Final = 60
# A continuation's send may wait out throttles until this close to the attempt's end.
HAND_ON_MARGIN_SECONDS: Final = 1.0
# SendMessage's DelaySeconds takes 0 to 900 (15 minutes).
SQS_MAX_DELAY_SECONDS: Final = 900


def continuation_delay(throttle_continuations: int) -> int:
    """Seconds a throttled partition waits before its continuation runs: growing, to a minute."""
    growing = CONTINUATION_DELAY_BASE_SECONDS << min(throttle_continuations, 8)
    ceiling = min(CONTINUATION_DELAY_CAP_SECONDS, growing)
    return max(1, round(ceiling / 2 + random.uniform(0, ceiling / 2)))  # noqa: S311 - jitter, not a secret


@dataclass
class HandOff:
    """Continuations of one job's partitions, on its work queue. A throttled send is waited out
    within `budget` (the attempt's time); past it, the send raises and the message being handled
    stays on the queue (reported failed), so nothing is lost, at the cost of its visibility timeout."""

    sqs: Any
    queue_url: str
    budget: Budget

    def send(self, message: WorkMessage, delay_s: int = 0) -> None:
        """The partition's next hop, visible after `delay_s` seconds."""
        self.resend(message.continuation(), delay_s)

    def resend(self, message: WorkMessage, delay_s: int) -> None:
        request: dict[str, Any] = {"QueueUrl": self.queue_url, "MessageBody": message.body()}
        if delay_s > 0:
            request["DelaySeconds"] = min(SQS_MAX_DELAY_SECONDS, delay_s)
        retry_throttled(lambda: self.sqs.send_message(**request), budget=self.budget, what="SendMessage")

    def after_throttle(
        self,
        message: WorkMessage,
        *,
        final: PartitionRecords,
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
