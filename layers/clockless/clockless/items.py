"""One item at a time: a row that cannot be read or applied fails alone.

A tick's due items are rows a job reads from its tables. Turning a row into an item (decode) and
an item into its effect (its writes, or a plain job's apply) happen here, one item at a time: any
exception for one item fails that item alone, and the rest of the page, the partition and the
tick go on. A failed item is a `FailedItem` (its key, the class of what went wrong, a short
message naming the field when the error knows it, its attempts): the kit lists the first
`MAX_LISTED` of a tick in the ledger with the count, logs one ERROR line per item, counts
`ItemsFailed`, and a fanned-out job also sends it to its work DLQ for replay.

A job's tolerance (`tolerated_failures=`, a count or a percentage of the items found, like Step
Functions' Distributed Map's ToleratedFailureCount/Percentage) decides whether a tick with failed
items ends `succeeded` (the failures listed) or `failed` ("n items failed: replay them").
docs/tick-contract.md, "Bad rows", has the whole contract.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from clockless.errors import ClocklessError, DeclarationError

# What went wrong with an item.
REASON_DECODE: Final = "decode"  # its row is not an item (a field missing or of the wrong kind)
REASON_DOMAIN: Final = "domain"  # the job's logic could not work out or apply its effect
REASON_TOO_BIG: Final = "too-big"  # more actions than one transaction takes
REASON_WRITE: Final = "write"  # DynamoDB refused its write for a reason other than "already done"
REASON_PARTITION: Final = "partition"  # its whole partition message exhausted its receives
REASONS: Final = (REASON_DECODE, REASON_DOMAIN, REASON_TOO_BIG, REASON_WRITE, REASON_PARTITION)
# The ledger lists this many failed items of a tick (and counts them all).
MAX_LISTED: Final = 100
MAX_MESSAGE_LENGTH: Final = 160
METRIC_ITEMS_FAILED: Final = "ItemsFailed"


class RowError(ClocklessError, ValueError):
    """A stored row that is not an item: names the row (its table and key) and the field."""

    def __init__(self, row: str, field: str, problem: str) -> None:
        super().__init__(f"row {row}: field '{field}' {problem}")
        self.row = row
        self.field = field
        self.problem = problem


class FieldError(ClocklessError, ValueError):
    """One field of a row is not what its item needs (`decode_row` names the row around it)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"field '{field}' {problem}")
        self.field = field
        self.problem = problem


class ItemsFailedError(ClocklessError, RuntimeError):
    """A tick whose failed items are more than its job tolerates: it ends `failed`, listing them."""

    def __init__(self, failures: Sequence[FailedItem], replay_hint: str) -> None:
        super().__init__(f"{len(failures)} items failed: replay them after the fix: {replay_hint}")
        self.failures = list(failures)


def short(text: str, limit: int = MAX_MESSAGE_LENGTH) -> str:
    """One line, at most `limit` characters: what a ledger row and a status cell can show."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class FailedItem:
    key: str
    reason: str
    message: str
    field: str | None = None
    attempts: int = 1

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"key": self.key, "reason": self.reason, "message": self.message}
        if self.field is not None:
            record["field"] = self.field
        if self.attempts != 1:
            record["attempts"] = self.attempts
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FailedItem:
        return cls(
            key=str(record.get("key", "?")),
            reason=str(record.get("reason", "?")),
            message=str(record.get("message", "")),
            field=None if record.get("field") is None else str(record["field"]),
            attempts=int(record.get("attempts", 1)),
        )


# Errors of the infrastructure, not of the item: they fail the whole run (its retry or redelivery
# goes on from where it stopped), never one item. Kit signals (a spent budget, a lost lease) too.
_TRANSIENT_MODULES: Final = ("botocore", "urllib3", "clockless.throttle", "clockless.fanout")


def is_transient(error: BaseException) -> bool:
    """Whether `error` is the infrastructure's (a lost connection, a timeout, an AWS error), not the item's."""
    if isinstance(error, (ConnectionError, TimeoutError, MemoryError)):
        return True
    return type(error).__module__.startswith(_TRANSIENT_MODULES)


def failure_of(key: str, reason: str, error: BaseException) -> FailedItem:
    """The failure an exception makes of one item (the field, when the error names one)."""
    name = getattr(error, "field", None)
    return FailedItem(
        key=key,
        reason=reason,
        message=short(f"{type(error).__name__}: {error}"),
        field=name if isinstance(name, str) else None,
    )


class ErrorLogger(Protocol):
    def error(self, msg: object, *args: object, **kwargs: Any) -> None: ...


def log_failure(logger: ErrorLogger, failure: FailedItem, what: str, *, table: str | None, **context: Any) -> None:
    """The one ERROR line of a failed item: its table, key, field, reason and message (`context`:
    what the logger's own keys do not say, such as the job and scheduled time from another thread)."""
    logger.error(
        what,
        extra={
            **context,
            "table": table,
            "key": failure.key,
            "field": failure.field,
            "reason": failure.reason,
            "error": failure.message,
        },
    )


def listed(failures: Iterable[FailedItem], limit: int = MAX_LISTED) -> list[FailedItem]:
    """The first `limit` items failed, each once with the attempts it took (its latest failure)."""
    latest: dict[str, FailedItem] = {}
    for failure in failures:
        before = latest.get(failure.key)
        attempts = failure.attempts if before is None else before.attempts + 1
        latest[failure.key] = FailedItem(failure.key, failure.reason, failure.message, failure.field, attempts)
    return list(latest.values())[:limit]


def dump_listed(failures: Sequence[FailedItem]) -> str:
    return json.dumps([failure.as_record() for failure in failures], sort_keys=True, separators=(",", ":"))


def load_listed(text: str | None) -> list[FailedItem]:
    if not text:
        return []
    try:
        records = json.loads(text)
    except ValueError:
        return []
    return [FailedItem.from_record(r) for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How many failed items a tick may have and still succeed (None, None: none)."""

    count: int | None = None
    percent: float | None = None

    def allows(self, failed: int, found: int) -> bool:
        if failed == 0:
            return True
        if self.count is not None and failed <= self.count:
            return True
        return self.percent is not None and found > 0 and failed * 100 <= self.percent * found

    def describe(self) -> str:
        if self.count is not None:
            return f"{self.count} items"
        return "none" if self.percent is None else f"{self.percent:g}% of the items found"


NO_TOLERANCE: Final = Tolerance()


def parse_tolerance(value: int | str | None, *, job: str) -> Tolerance:
    """`tolerated_failures=`: a count (`5`) or a percentage of the items found (`"2%"`, `"0.5%"`)."""
    problem = f"job {job!r}: tolerated_failures must be a count >= 0 or a percentage like '2%', got {value!r}"
    if value is None:
        return NO_TOLERANCE
    if isinstance(value, bool):
        raise DeclarationError(problem)
    if isinstance(value, int):
        if value < 0:
            raise DeclarationError(problem)
        return Tolerance(count=value)
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            percent = float(value.strip()[:-1])
        except ValueError:
            raise DeclarationError(problem) from None
        if not math.isfinite(percent) or not 0 <= percent <= 100:
            raise DeclarationError(problem)
        return Tolerance(percent=percent)
    raise DeclarationError(problem)


@dataclass
class ItemOutcomes:
    """What a plain job's loop did with its items: counts, and the failures (all of them)."""

    applied: int = 0
    already_done: int = 0
    failures: list[FailedItem] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def found(self) -> int:
        return self.applied + self.already_done + self.failed

    def as_summary(self) -> dict[str, int]:
        return {"found": self.found, "applied": self.applied, "already_done": self.already_done, "failed": self.failed}


def apply_each[RowT, ItemT](
    rows: Iterable[RowT],
    *,
    row_key: Callable[[RowT], str],
    item_of: Callable[[RowT], ItemT],
    apply: Callable[[ItemT], bool],
    on_failed: Callable[[FailedItem], None] | None = None,
) -> ItemOutcomes:
    """Each row decoded and applied on its own (`apply`: True applied, False already done); an
    exception for one row fails that row alone, unless it is the infrastructure's (`is_transient`:
    a lost connection, an AWS error, which fail the tick for its retry). Reading `rows` is not
    isolated: a store that cannot be read fails the tick (its retry reads again)."""
    outcomes = ItemOutcomes()
    for index, row in enumerate(rows):
        key = key_of(row_key, row, index)
        try:
            item = item_of(row)
        except Exception as error:
            if is_transient(error):
                raise
            failure = failure_of(key, REASON_DECODE, error)
        else:
            try:
                if apply(item):
                    outcomes.applied += 1
                else:
                    outcomes.already_done += 1
                continue
            except Exception as error:
                if is_transient(error):
                    raise
                failure = failure_of(key, REASON_DOMAIN, error)
        outcomes.failures.append(failure)
        if on_failed is not None:
            on_failed(failure)
    return outcomes


def key_of[RowT](row_key: Callable[[RowT], str], row: RowT, index: int) -> str:
    """The row's key; a row whose key cannot be read is named by its position."""
    try:
        return str(row_key(row))
    except Exception as error:
        return short(f"<row {index} of its page: key unreadable: {type(error).__name__}: {error}>", 120)
