"""The tick: one scheduled time of one job, parsed from what EventBridge Scheduler delivers.

Every field has a type, a range and a size (docs/tick-contract.md, "Tick input"). A payload
outside them is a `MalformedTickError` naming the field, raised before anything is claimed or
written, and its message quotes at most a short prefix of what was sent.
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from clockless.errors import ArgumentError, ClocklessError

# ids and ARNs: a schedule ARN is at most ~200 characters (64-character group and name), an
# execution id or API request id a few dozen. Far above both, and far below DynamoDB's limits.
MAX_ID_LENGTH: Final = 256
# Scheduler retries at most 185 times, so its attempt numbers stop at 186.
MAX_ATTEMPT: Final = 1000
# "2026-11-29T09:00:00.000000+05:30:00" is 35 characters; anything much longer is not a time.
MAX_TIME_LENGTH: Final = 64
# The keys, the ledger and the logs spell a time with four digits of year, always.
MIN_YEAR: Final = 1000
MAX_YEAR: Final = 9999
# How far ahead of this process's clock a scheduled time may be and still be a tick that is
# due: Scheduler never fires before the scheduled time (it fires within the minute after),
# and AWS hosts keep time to well under a second; the slack is for the clocks we do not own
# (an operator's machine choosing run-now's minute). A refusal is loud, and a scheduled
# delivery refused by skew passes on Lambda's retry a minute later. See docs/tick-contract.md.
FUTURE_TICK_ALLOWANCE: Final = timedelta(seconds=5)
# What an error message quotes of a bad value: enough to recognise it, never all of it.
ECHO_LENGTH: Final = 64

_DIGITS: Final = re.compile(r"[0-9]+")
# bool before int: True is an int to isinstance.
_JSON_KINDS: Final[tuple[tuple[Any, str], ...]] = (
    (type(None), "null"),
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a non-integer number"),
    (Mapping, "an object"),
    (list | tuple, "an array"),
)


class MalformedTickError(ClocklessError, ValueError):
    """The payload cannot be a tick of this job. Raised before anything is claimed or written."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"malformed tick: field '{echo(field)}' {problem}")
        self.field = field
        self.problem = problem


class Trigger(enum.StrEnum):
    """Who asked for the tick. Only the schedule is the clock; the rest replay its contract."""

    SCHEDULE = "schedule"
    BACKFILL = "backfill"
    MANUAL = "manual"
    HTTP = "http"
    # An operator's explicit run at an instant that is not one of the schedule's ticks
    # (`clockless run-now --at ... --off-schedule`): recorded as such in the ledger.
    OFF_SCHEDULE = "off-schedule"


def utc_now() -> datetime:
    """This process's clock, in UTC. Reading the time is not scheduling (no-clock-in-app allows
    it), and time-machine, the simulator's clock, moves `time.time()`."""
    return datetime.fromtimestamp(time.time(), UTC)


def echo(text: str) -> str:
    """At most ECHO_LENGTH characters of `text`, marked when cut."""
    return text if len(text) <= ECHO_LENGTH else f"{text[:ECHO_LENGTH]}... ({len(text)} characters)"


def describe(value: Any) -> str:
    """A bad value as an error message may show it: a short quote, or only its JSON type."""
    if isinstance(value, str):
        return repr(echo(value))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**ECHO_LENGTH:
        return f"the integer {value}"
    return next((name for kind, name in _JSON_KINDS if isinstance(value, kind)), type(value).__name__)


def format_scheduled_time(moment: datetime) -> str:
    """The one spelling of a scheduled time used in keys and payloads: UTC, seconds, `Z`, a
    four-digit year (zero-padded, whatever the platform's strftime does)."""
    if moment.tzinfo is None:
        raise ArgumentError("scheduled time must be timezone-aware")
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:
        raise ArgumentError("scheduled time is outside the years 1 to 9999 once converted to UTC") from None
    return utc.replace(microsecond=0, tzinfo=None).isoformat(timespec="seconds") + "Z"


def parse_scheduled_time(text: str, *, field: str = "scheduled_time") -> datetime:
    """Parse an ISO-8601 instant that carries its zone (`Z` or an offset) into UTC, whole seconds.

    Its year is four digits before and after conversion to UTC; anything else, including a
    value too long to be a time, is a `MalformedTickError` naming `field`.
    """
    return _parse_instant(text, field).replace(microsecond=0)


def parse_tick_time(text: str, *, field: str = "scheduled_time") -> datetime:
    """A tick's scheduled time: `parse_scheduled_time`, and on a whole minute once in UTC
    (so an offset of `+00:00:30` cannot move a tick off its minute)."""
    moment = _parse_instant(text, field)
    if moment.second or moment.microsecond:
        raise MalformedTickError(
            field, f"must be a whole minute in UTC (seconds 00), got {describe(text)} = {_iso(moment)}"
        )
    return moment


def reject_future(scheduled_time: datetime, *, now: datetime, field: str = "scheduled_time") -> None:
    """Raise unless the tick is due: at most FUTURE_TICK_ALLOWANCE after `now`."""
    ahead = scheduled_time - now
    if ahead > FUTURE_TICK_ALLOWANCE:
        raise MalformedTickError(
            field,
            f"{format_scheduled_time(scheduled_time)} is {_duration(ahead)} in the future "
            f"(now is {format_scheduled_time(now)}; clock-skew allowance {_duration(FUTURE_TICK_ALLOWANCE)}): "
            "a tick cannot run before its time",
        )


@dataclass(frozen=True, slots=True)
class Tick:
    """One delivery of one scheduled time. Identity is (job, scheduled_time); the rest is per attempt.

    Constructing one checks every field's type, range and size, so a `Tick` is always valid;
    whether it is due is a question of the clock, asked by `from_event` and `reject_future`.
    """

    job: str
    scheduled_time: datetime
    schedule_arn: str | None
    attempt: int
    execution_id: str | None
    trigger: Trigger

    def __post_init__(self) -> None:
        _check_id("job", self.job)
        if not isinstance(self.scheduled_time, datetime) or self.scheduled_time.tzinfo is None:
            raise MalformedTickError("scheduled_time", "must be a timezone-aware datetime")
        years = f"must be in the years {MIN_YEAR} to {MAX_YEAR} in UTC"
        try:
            utc = self.scheduled_time.astimezone(UTC)
        except OverflowError:
            raise MalformedTickError("scheduled_time", years) from None
        if not MIN_YEAR <= utc.year <= MAX_YEAR:
            raise MalformedTickError("scheduled_time", years)
        if utc.second or utc.microsecond:
            raise MalformedTickError("scheduled_time", f"must be a whole minute in UTC, got {_iso(utc)}")
        if self.schedule_arn is not None:
            _check_arn("schedule_arn", self.schedule_arn)
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int):
            raise MalformedTickError("attempt", f"must be an integer from 1 to {MAX_ATTEMPT}")
        _check_attempt_range(self.attempt, self.attempt)
        if self.execution_id is not None:
            _check_id("execution_id", self.execution_id)
        if not isinstance(self.trigger, Trigger):
            raise MalformedTickError("trigger", f"must be one of {_TRIGGERS}")

    @property
    def identity(self) -> dict[str, str]:
        """What makes two deliveries the same tick: never the execution id, which changes per attempt."""
        return {"job": self.job, "scheduled_time": format_scheduled_time(self.scheduled_time)}

    @property
    def key(self) -> str:
        return f"{self.job}@{format_scheduled_time(self.scheduled_time)}"

    @classmethod
    def from_event(cls, event: Any, *, expected_job: str, now: datetime | None = None) -> Tick:
        """Parse the scheduler's `Input` payload into a tick that is due at `now` (default: this
        process's clock); raise `MalformedTickError` naming the bad field."""
        if not isinstance(event, Mapping):
            raise MalformedTickError("<event>", f"must be a JSON object, got {describe(event)}")
        job = _required_str(event, "job")
        if job != expected_job:
            raise MalformedTickError("job", f"names job {describe(job)}, but this function runs {expected_job!r}")
        scheduled_time = parse_tick_time(_required_str(event, "scheduled_time", max_length=MAX_TIME_LENGTH))
        reject_future(scheduled_time, now=utc_now() if now is None else now)
        schedule_arn = _optional_str(event, "schedule_arn")
        if schedule_arn is not None:
            _check_arn("schedule_arn", schedule_arn)
        return cls(
            job=job,
            scheduled_time=scheduled_time,
            schedule_arn=schedule_arn,
            attempt=_attempt(event.get("attempt", "1")),
            execution_id=_optional_str(event, "execution_id"),
            trigger=_trigger(event.get("trigger", Trigger.SCHEDULE.value)),
        )

    def to_event(self) -> dict[str, str]:
        """The payload shape the scheduler delivers, for backfill, run-now and local replay."""
        event = {
            "job": self.job,
            "scheduled_time": format_scheduled_time(self.scheduled_time),
            "attempt": str(self.attempt),
            "trigger": self.trigger.value,
        }
        if self.schedule_arn is not None:
            event["schedule_arn"] = self.schedule_arn
        if self.execution_id is not None:
            event["execution_id"] = self.execution_id
        return event


_TRIGGERS: Final = ", ".join(t.value for t in Trigger)


def _parse_instant(text: str, field: str) -> datetime:
    if not isinstance(text, str):
        raise MalformedTickError(field, f"must be a string like 2026-01-01T14:00:00Z, got {describe(text)}")
    if len(text) > MAX_TIME_LENGTH:
        raise MalformedTickError(field, f"is {len(text)} characters long, more than a time's {MAX_TIME_LENGTH}")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise MalformedTickError(field, f"is not an ISO-8601 time: {describe(text)}") from None
    if moment.tzinfo is None:
        raise MalformedTickError(field, f"has no time zone (expected e.g. 2026-01-01T14:00:00Z): {describe(text)}")
    out_of_range = f"must be in the years {MIN_YEAR} to {MAX_YEAR}, also once converted to UTC: {describe(text)}"
    if moment.year < MIN_YEAR:
        raise MalformedTickError(field, out_of_range)
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:
        raise MalformedTickError(field, out_of_range) from None
    if not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise MalformedTickError(field, out_of_range)
    return utc


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def _duration(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def _check_id(field: str, value: Any, *, max_length: int = MAX_ID_LENGTH) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MalformedTickError(field, f"must be a non-empty string, got {describe(value)}")
    if len(value) > max_length:
        raise MalformedTickError(field, f"is {len(value)} characters long, more than {max_length}: {describe(value)}")
    return value


def _check_arn(field: str, value: str) -> None:
    if not value.startswith("arn:"):
        raise MalformedTickError(field, f"must be an ARN (arn:...), got {describe(value)}")


def _required_str(event: Mapping[str, Any], field: str, *, max_length: int = MAX_ID_LENGTH) -> str:
    if field not in event:
        raise MalformedTickError(field, "is missing")
    value = _check_id(field, event[field], max_length=max_length)
    if value.startswith("<aws.scheduler."):
        raise MalformedTickError(field, f"holds an unsubstituted placeholder {describe(value)}")
    return value


def _optional_str(event: Mapping[str, Any], field: str) -> str | None:
    if event.get(field) is None:
        return None
    return _required_str(event, field)


def _attempt(value: Any) -> int:
    # The scheduler substitutes the attempt number into a JSON string; callers may send a number.
    # Never float(): 1e400 is infinity, 1.5 is no attempt, and a long digit string no small number.
    if isinstance(value, str) and _DIGITS.fullmatch(value) and len(value) <= len(str(MAX_ATTEMPT)):
        return _check_attempt_range(int(value), value)
    if isinstance(value, int) and not isinstance(value, bool):
        return _check_attempt_range(value, value)
    raise MalformedTickError("attempt", f"must be an integer from 1 to {MAX_ATTEMPT}, got {describe(value)}")


def _check_attempt_range(attempt: int, sent: Any) -> int:
    if not 1 <= attempt <= MAX_ATTEMPT:
        raise MalformedTickError("attempt", f"must be an integer from 1 to {MAX_ATTEMPT}, got {describe(sent)}")
    return attempt


def _trigger(value: Any) -> Trigger:
    if isinstance(value, str) and value in Trigger._value2member_map_:
        return Trigger(value)
    raise MalformedTickError("trigger", f"must be one of {_TRIGGERS}, got {describe(value)}")
