"""When the fan-out tries again, and after how long: its retry and backoff policy.

It sits beside the throttle handling it builds on (`clockless.throttle` waits a throttle out within
an attempt's budget; what is left when the budget is spent is handed on, never failed).

- **Conflicts.** A transaction cancelled for a conflict, or DynamoDB unavailable, is resent after
  full-jitter backoff (50 ms base, 2 s cap), at most MAX_CONFLICT_ATTEMPTS times; then
  `WorkRetriesSpent` fails the run and SQS redelivers its message.
- **Continuations.** A partition handed on after throttling comes back after a growing, jittered
  delay (about 5, 10, 20, 40, then 60 s), so partitions throttled together do not come back together.
- **Redeliveries.** A message a run failed comes back 10 s later, doubling per receive up to 300 s,
  instead of after the work queue's visibility timeout; one whose run died, 10 s after the attempt
  could last (`clockless.fanout.redelivery`).
- **Margins.** How close to the attempt's end each step may still wait out throttles.
"""

from __future__ import annotations

import math
import random
from typing import Final

from clockless.errors import ClocklessError
from clockless.throttle import THROTTLE_REASONS
from clockless.throttle import backoff_seconds as throttle_backoff_seconds

# ------------------------------------------------------------------------------------------- conflicts
MAX_CONFLICT_ATTEMPTS: Final = 8
CONFLICT_BACKOFF_BASE_SECONDS: Final = 0.05
CONFLICT_BACKOFF_CAP_SECONDS: Final = 2.0
CONFLICT_REASON: Final = "TransactionConflict"
# Per-action reasons worth resending the same items for (a throttle within the budget, a
# conflict up to `max_attempts` times).
RETRY_REASONS: Final = frozenset({CONFLICT_REASON, *THROTTLE_REASONS})
# Whole-request errors left after botocore's own retries, safe to resend: the token makes a
# resend of an applied transaction a no-op. Throttles are waited out within the budget; the
# others are resent up to `max_attempts` times.
TRANSIENT_ERRORS: Final = frozenset({"TransactionInProgressException", "InternalServerError", "ServiceUnavailable"})


class WorkRetriesSpent(ClocklessError, RuntimeError):
    """A transaction stayed in conflict (or DynamoDB unavailable) through every attempt; the
    message is redelivered. Throttles never end here: they end in `BudgetSpent`."""


def conflict_backoff_seconds(attempt: int) -> float:
    """Full jitter (base 50 ms, cap 2 s) after a conflict: lanes and workers that collided spread
    out instead of retrying in step."""
    return throttle_backoff_seconds(attempt, base=CONFLICT_BACKOFF_BASE_SECONDS, cap=CONFLICT_BACKOFF_CAP_SECONDS)


# --------------------------------------------------------------------------------------- continuations
# A throttled partition comes back after about 5, 10, 20, 40, then 60 s (half of it jittered),
# so partitions throttled together do not come back together.
CONTINUATION_DELAY_BASE_SECONDS: Final = 5
CONTINUATION_DELAY_CAP_SECONDS: Final = 60


def continuation_delay(throttle_continuations: int) -> int:
    """Seconds a throttled partition waits before its continuation runs: growing, to a minute."""
    growing = CONTINUATION_DELAY_BASE_SECONDS << min(throttle_continuations, 8)
    ceiling = min(CONTINUATION_DELAY_CAP_SECONDS, growing)
    return max(1, round(ceiling / 2 + random.uniform(0, ceiling / 2)))  # noqa: S311 - jitter, not a secret


# ---------------------------------------------------------------------------------------- redeliveries
FIRST_BACKOFF_SECONDS: Final = 10
MAX_BACKOFF_SECONDS: Final = 300


def redelivery_backoff_seconds(receives: int) -> int:
    """How long a message failed on its `receives`-th receive stays hidden: 10 s, 20 s, 40 s, ... capped."""
    return int(min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** max(0, min(receives, 16) - 1)))


def redelivery_backoff_text() -> str:
    """The backoff in words, for lines that tell an operator when a failed message is back."""
    first, last = redelivery_backoff_seconds(1), redelivery_backoff_seconds(MAX_BACKOFF_SECONDS)
    return f"{first} s after its first failure, doubling per receive up to {last} s"


# A message being run is hidden until its attempt is surely over plus this (its lease has run out
# by then), so a run that dies is tried again then, not after the queue's visibility timeout.
ATTEMPT_END_MARGIN_SECONDS: Final = FIRST_BACKOFF_SECONDS


def after_attempt_seconds(remaining: float) -> int:
    """Seconds from now until an attempt with `remaining` seconds left is surely over, plus the margin."""
    return math.ceil(max(0.0, remaining)) + ATTEMPT_END_MARGIN_SECONDS


# --------------------------------------------------------------------------------------------- margins
# The last writes of a run (the release, the done transaction, the finisher) may wait out
# throttles until this close to the attempt's end; the work itself stops at the time budget.
FINAL_MARGIN_SECONDS: Final = 3.0
# A continuation's send may wait out throttles until this close to the attempt's end.
HAND_ON_MARGIN_SECONDS: Final = 1.0
# The coordinator's sends stop waiting out throttles this long before the attempt ends: its
# completion (which waits out its own throttles until 3 s before the end) gets the rest.
SEND_MARGIN_SECONDS: Final = 10.0
