"""A schedule of a function seen from the zones it serves: its job, its declaration, its ticks' UTC offsets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from clockless.schedule.expressions import ScheduleExpressionError
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function, Schedule
from clockless_tools.timezones.declaration import TimeDeclaration
from clockless_tools.timezones.rule import REQUIRED_SCHEDULE_TIMEZONE, DeclarationError, LocalTimeRule


@dataclass(frozen=True, slots=True)
class ScheduledEvent:
    """A schedule of a function, and what its function declares about time."""

    job: str
    function_id: str
    event_id: str
    expression: str
    timezone: str | None
    declaration: TimeDeclaration | None

    @property
    def zones(self) -> tuple[str, ...]:
        return () if self.declaration is None else self.declaration.zones

    @property
    def rule(self) -> LocalTimeRule | None:
        return None if self.declaration is None else self.declaration.rule

    def describe(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "function": self.function_id,
            "event": self.event_id,
            "expression": self.expression,
            "timezone": self.timezone,
            "zones": None if self.declaration is None else list(self.zones),
            "zones_parameter": None if self.declaration is None else self.declaration.zones_parameter,
            "rule": None if self.rule is None else self.rule.as_dict(),
        }


def job_name(schedule: Schedule) -> str:
    """The job the schedule's Input names, or `<Function>.<Event>` when it names none."""
    try:
        return schedule.job
    except TemplateError:
        return f"{schedule.function_id}.{schedule.event_id}"


def written_in_utc(function: Function, schedule: Schedule) -> bool:
    """EventBridge rules (`Schedule`) are always UTC; a `ScheduleV2` must say UTC itself.

    Scheduler would default a missing zone to UTC too, but the template states it so that nobody
    reads the cron in a zone it is not in."""
    events = function.properties.get("Events") or {}
    event_type = (events.get(schedule.event_id) or {}).get("Type")
    return event_type != "ScheduleV2" or schedule.timezone == REQUIRED_SCHEDULE_TIMEZONE


def expression_error(schedule: Schedule, error: ScheduleExpressionError) -> DeclarationError:
    if isinstance(error, TemplateError):  # already names the function and event
        return DeclarationError(str(error))
    return DeclarationError(f"{schedule.function_id}.Events.{schedule.event_id}.ScheduleExpression: {error}")


def utc_offset(local: datetime) -> str:
    """`UTC-08:00`: the offset of an aware local time."""
    offset = local.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"
