"""Throttling means slower, never failed: what a throttle looks like, and retrying it within the
time an attempt has left.

DynamoDB refuses a request for capacity in three shapes: `ThrottlingException` and
`ProvisionedThroughputExceededException` (botocore's standard retries resend those, then give
up), `RequestLimitExceeded` (the account's throughput quota), and a `TransactWriteItems`
cancelled as a whole (`TransactionCanceledException`) whose `CancellationReasons` name
`ThrottlingError` (or `ProvisionedThroughputExceeded`, `RequestLimitExceeded`) for the actions
that met the throttle. botocore never retries that last one. A throttled request changed
nothing, so sending it again is always safe; the only question is how long to wait, and the
answer here is "as long as this attempt can afford": capped exponential backoff with full jitter
until the attempt's `Budget` (the Lambda context's remaining time minus a safety margin) is
spent, then `BudgetSpent`, which the caller turns into "hand on and come back later" instead of
a failure. docs/fan-out.md ("Throttling") has what each caller does then.

The clock is injectable (`Clock`): unit tests advance a fake one instead of sleeping, and the
simulator moves its time-machine clock.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from botocore.exceptions import ClientError

from clockless.errors import ClocklessError

# Whole-request refusals for capacity: DynamoDB's error codes, and SQS's (`RequestThrottled`: the
# queue's or the account's request rate; `KmsThrottled`: the queue's KMS key), both of which
# botocore's standard retries resend and then give up on.
THROTTLE_ERRORS: Final = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "KmsThrottled",
    }
)
# The same, as the reason on one action of a cancelled transaction.
THROTTLE_REASONS: Final = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
# Reasons that may stand beside a throttle without deciding anything: the action was not
# evaluated ("None") or met a concurrent write (resending is right for both).
_NEUTRAL_REASONS: Final = frozenset({"None", "TransactionConflict"})
CANCELLED: Final = "TransactionCanceledException"

BACKOFF_BASE_SECONDS: Final = 0.05
# A throttle can last: waits grow to 5 s each, within the budget.
THROTTLE_BACKOFF_CAP_SECONDS: Final = 5.0
# Without a Lambda context (a local call), an attempt may take as long as Lambda's maximum.
NO_CONTEXT_REMAINING_MS: Final = 15 * 60 * 1000


class Clock(Protocol):
    """Seconds that move, and a way to wait: `time.monotonic`/`time.sleep` in Lambda."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


SYSTEM_CLOCK: Final = SystemClock()


def _client_error(error: BaseException) -> ClientError | None:
    """botocore's error, also from inside a PynamoDB exception (which keeps it as `cause`)."""
    if isinstance(error, ClientError):
        return error
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, ClientError) else None


def error_code(error: BaseException) -> str:
    found = _client_error(error)
    return "" if found is None else str(found.response.get("Error", {}).get("Code", ""))


def cancellation_reasons(error: BaseException, count: int = 0) -> list[dict[str, Any]]:
    """The reason of each action of a cancelled transaction, in order (`Code`, `Message`, and the
    item when the action asked for `ALL_OLD`), padded with `{}` to at least `count` actions."""
    found = _client_error(error)
    reasons = [] if found is None else [dict(r or {}) for r in found.response.get("CancellationReasons") or []]
    return reasons + [{}] * max(0, count - len(reasons))


def cancellation_codes(error: BaseException) -> list[str]:
    """The reason code of each action of a cancelled transaction, in order ("None": not the cause)."""
    return [str(reason.get("Code") or "None") for reason in cancellation_reasons(error)]


def is_throttle(error: BaseException) -> bool:
    """True when DynamoDB refused the request for capacity and nothing else decided it.

    A cancelled transaction counts when some action was throttled and every other action was
    either not evaluated or met a conflict; a failed condition or a validation error beside a
    throttle decides the outcome, and the caller reads it (it is not a throttle to wait out).
    """
    code = error_code(error)
    if code in THROTTLE_ERRORS:
        return True
    if code != CANCELLED:
        return False
    codes = cancellation_codes(error)
    return any(c in THROTTLE_REASONS for c in codes) and all(c in THROTTLE_REASONS | _NEUTRAL_REASONS for c in codes)


def throttled_tables(request: Mapping[str, Any], error: BaseException | None = None) -> list[str]:
    """The tables a throttled request names: for a cancelled transaction, those of its throttled
    actions (what an operator wants to see in `last_error`)."""
    actions: Sequence[Mapping[str, Any]] = request.get("TransactItems") or []
    if actions:
        codes = cancellation_codes(error) if error is not None else []
        chosen = [a for i, a in enumerate(actions) if i < len(codes) and codes[i] in THROTTLE_REASONS] or list(actions)
        return sorted({str(op.get("TableName")) for a in chosen for op in a.values() if isinstance(op, Mapping)})
    table = request.get("TableName")
    return [str(table)] if table else []


def describe_throttle(error: BaseException, tables: Sequence[str]) -> str:
    """One line: which refusal, on which table(s)."""
    code = error_code(error)
    if code == CANCELLED:
        reasons = sorted({c for c in cancellation_codes(error) if c in THROTTLE_REASONS})
        code = f"{CANCELLED} ({', '.join(reasons)})"
    where = f" on {', '.join(tables)}" if tables else ""
    return f"{code}{where}"


def backoff_seconds(
    attempt: int, *, base: float = BACKOFF_BASE_SECONDS, cap: float = THROTTLE_BACKOFF_CAP_SECONDS
) -> float:
    """Full jitter: callers that collided spread out instead of retrying in step."""
    return random.uniform(0, min(cap, base * 2**attempt))  # noqa: S311 - jitter, not a secret


TOKEN_LENGTH: Final = 36


def client_request_token(transact_items: list[dict[str, Any]]) -> str:
    """The same content, the same token: DynamoDB answers a resend of an applied transaction
    from it (for 10 minutes), whoever sends it."""
    canonical = json.dumps(transact_items, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:TOKEN_LENGTH]


class BudgetSpent(ClocklessError, RuntimeError):
    """Still throttled when the attempt's budget ran out. Not a failure: the caller hands the
    rest of the work on to a later attempt."""

    def __init__(self, what: str, error: BaseException, *, waited_s: float) -> None:
        super().__init__(f"{what} still throttled after {waited_s:.1f} s: {describe_throttle(error, [])}")
        self.what = what
        self.error = error
        self.waited_s = waited_s
        # Filled in by whoever knows the request (the tables it named).
        self.description = describe_throttle(error, [])


def remaining_ms(context: Any) -> int:
    """What the Lambda context says this attempt has left (15 minutes without a context)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return int(remaining()) if callable(remaining) else NO_CONTEXT_REMAINING_MS


@dataclass
class Budget:
    """The time an attempt may spend waiting out throttles: until `margin_s` before its end.

    Measured on `clock` from when it was made, and never beyond what the Lambda context says is
    left (so a fake clock and a real context agree on the smaller of the two)."""

    context: Any
    margin_s: float
    clock: Clock = field(default=SYSTEM_CLOCK)
    _end: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self._end = self.clock.now() + remaining_ms(self.context) / 1000

    def left_s(self, margin_s: float | None = None) -> float:
        """Seconds left before the margin (`margin_s` overrides it, e.g. for a last write)."""
        margin = self.margin_s if margin_s is None else margin_s
        return min(self._end - self.clock.now(), remaining_ms(self.context) / 1000) - margin

    @property
    def spent(self) -> bool:
        return self.left_s() <= 0

    def with_margin(self, margin_s: float) -> Budget:
        """The same attempt, with another margin (a last write may use what the work may not)."""
        other = Budget.__new__(Budget)
        other.context, other.margin_s, other.clock, other._end = self.context, margin_s, self.clock, self._end
        return other


def retry_throttled[T](
    call: Callable[[], T],
    *,
    budget: Budget,
    what: str,
    on_throttle: Callable[[BaseException], None] | None = None,
) -> T:
    """`call()` until it is not throttled; throttles waited out with backoff while the budget lasts.

    Anything else `call` raises is raised as it is. `on_throttle` hears every throttle (pacing
    backs off on it)."""
    attempt = 0
    waited = 0.0
    while True:
        try:
            return call()
        except Exception as error:  # botocore's ClientError, or PynamoDB's wrapping of it
            if not is_throttle(error):
                raise
            if on_throttle is not None:
                on_throttle(error)
            delay = backoff_seconds(attempt)
            if budget.left_s() < delay:
                raise BudgetSpent(what, error, waited_s=waited) from error
            budget.clock.sleep(delay)
            waited += delay
            attempt += 1


class ThrottleRetryingClient:
    """A DynamoDB client whose every call waits out throttles within `budget` (see `retry_throttled`).

    For bookkeeping writes and reads (leases, cursors, the done transaction, the finisher): their
    code stays as it is, and `exceptions` is the real client's, so their `except` clauses work.
    A transaction resent here carries the same `ClientRequestToken` as its first send when the
    caller set one."""

    def __init__(self, client: Any, budget: Budget) -> None:
        self.client = client
        self.budget = budget
        self.exceptions = client.exceptions

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        if not callable(method):
            return method

        def call(**request: Any) -> Any:
            try:
                return retry_throttled(lambda: method(**request), budget=self.budget, what=name)
            except BudgetSpent as spent:
                spent.description = describe_throttle(spent.error, throttled_tables(request, spent.error))
                raise

        return call
