"""The tick: one scheduled time of one job, parsed from what EventBridge Scheduler delivers."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


class MalformedTickError(ValueError):
    """The payload cannot be a tick of this job. Raised before anything is claimed or written."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"malformed tick: field '{field}' {problem}")
        self.field = field
        self.problem = problem


class Trigger(enum.StrEnum):
    """Who asked for the tick. Only the schedule is the clock; the rest replay its contract."""

    SCHEDULE = "schedule"
    BACKFILL = "backfill"
    MANUAL = "manual"
    HTTP = "http"


def format_scheduled_time(moment: datetime) -> str:
    """The one spelling of a scheduled time used in keys and payloads: UTC, seconds, `Z`."""
    if moment.tzinfo is None:
        raise ValueError("scheduled time must be timezone-aware")
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_scheduled_time(text: str, *, field: str = "scheduled_time") -> datetime:
    """Parse an ISO-8601 instant that carries its zone (`Z` or an offset) into UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise MalformedTickError(field, f"is not an ISO-8601 time: {text!r}") from None
    if moment.tzinfo is None:
        raise MalformedTickError(field, f"has no time zone (expected e.g. 2026-01-01T14:00:00Z): {text!r}")
    return moment.astimezone(UTC).replace(microsecond=0)


@dataclass(frozen=True, slots=True)
class Tick:
    """One delivery of one scheduled time. Identity is (job, scheduled_time); the rest is per attempt."""

    job: str
    scheduled_time: datetime
    schedule_arn: str | None
    attempt: int
    execution_id: str | None
    trigger: Trigger

    @property
    def identity(self) -> dict[str, str]:
        """What makes two deliveries the same tick: never the execution id, which changes per attempt."""
        return {"job": self.job, "scheduled_time": format_scheduled_time(self.scheduled_time)}

    @property
    def key(self) -> str:
        return f"{self.job}@{format_scheduled_time(self.scheduled_time)}"

    @classmethod
    def from_event(cls, event: Any, *, expected_job: str) -> Tick:
        """Parse the scheduler's `Input` payload; raise `MalformedTickError` naming the bad field."""
        if not isinstance(event, Mapping):
            raise MalformedTickError("<event>", f"must be a JSON object, got {type(event).__name__}")
        job = _required_str(event, "job")
        if job != expected_job:
            raise MalformedTickError("job", f"names job {job!r}, but this function runs {expected_job!r}")
        scheduled_time = parse_scheduled_time(_required_str(event, "scheduled_time"))
        return cls(
            job=job,
            scheduled_time=scheduled_time,
            schedule_arn=_optional_str(event, "schedule_arn"),
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


def _required_str(event: Mapping[str, Any], field: str) -> str:
    if field not in event:
        raise MalformedTickError(field, "is missing")
    value = event[field]
    if not isinstance(value, str) or not value.strip():
        raise MalformedTickError(field, f"must be a non-empty string, got {value!r}")
    if value.startswith("<aws.scheduler."):
        raise MalformedTickError(field, f"holds an unsubstituted placeholder {value!r}")
    return value


def _optional_str(event: Mapping[str, Any], field: str) -> str | None:
    if event.get(field) is None:
        return None
    return _required_str(event, field)


def _attempt(value: Any) -> int:
    # The scheduler substitutes the attempt number into a JSON string; callers may send a number.
    if isinstance(value, bool):
        raise MalformedTickError("attempt", f"must be a positive integer, got {value!r}")
    try:
        attempt = int(value)
    except (TypeError, ValueError):
        raise MalformedTickError("attempt", f"must be a positive integer, got {value!r}") from None
    if attempt < 1:
        raise MalformedTickError("attempt", f"must be a positive integer, got {value!r}")
    return attempt


def _trigger(value: Any) -> Trigger:
    try:
        return Trigger(value)
    except ValueError:
        allowed = ", ".join(t.value for t in Trigger)
        raise MalformedTickError("trigger", f"must be one of {allowed}, got {value!r}") from None
