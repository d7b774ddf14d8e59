"""`clockless schedules show`: the next ticks of each schedule, in UTC and in each operating zone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from clockless import format_scheduled_time
from clockless.schedule.expressions import ScheduleExpressionError
from clockless_tools.template.model import Template
from clockless_tools.timezones.declaration import missing_declaration_keys, read_declaration
from clockless_tools.timezones.event import ScheduledEvent, expression_error, job_name, written_in_utc
from clockless_tools.timezones.rule import METADATA_KEY, Breach, breaches, local_times


@dataclass(frozen=True, slots=True)
class UpcomingTicks(ScheduledEvent):
    """A schedule's next ticks, each in UTC and in every operating zone, with any breach of its rule."""

    ticks: tuple[datetime, ...]
    breaches: Mapping[datetime, tuple[Breach, ...]]
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.describe(),
            "note": self.note,
            "ticks": [
                {
                    "utc": format_scheduled_time(tick),
                    "local": {zone: moment.isoformat() for zone, moment in local_times(tick, self.zones).items()},
                    "breaches": [
                        {"rule": b.rule, "zone": b.zone, "detail": b.detail} for b in self.breaches.get(tick, ())
                    ],
                }
                for tick in self.ticks
            ],
        }


def upcoming_ticks(template: Template, *, after: datetime, count: int) -> list[UpcomingTicks]:
    """Each schedule's next `count` ticks strictly after `after`."""
    if count < 1:
        raise ValueError("count must be at least 1")
    shown = []
    for function in template.scheduled_functions.values():
        declaration = None if missing_declaration_keys(function) else read_declaration(function, template)
        for schedule in function.schedules:
            common: dict[str, Any] = {
                "job": job_name(schedule),
                "function_id": function.logical_id,
                "event_id": schedule.event_id,
                "expression": schedule.expression,
                "timezone": schedule.timezone,
                "declaration": declaration,
            }
            try:
                ticks = tuple(schedule.spec(template).next_ticks(after, count))
            except ScheduleExpressionError as error:
                raise expression_error(schedule, error) from None
            rule = None if declaration is None else declaration.rule
            found = {t: tuple(b) for t in ticks if rule and declaration and (b := breaches(rule, t, declaration.zones))}
            note = None if declaration is not None else f"no Metadata.{METADATA_KEY} declaration: UTC only"
            if not written_in_utc(function, schedule):
                note = (
                    f"ScheduleExpressionTimezone is {schedule.timezone or 'missing'}, not UTC: ticks placed in that "
                    "zone, where a cron skips the hour clocks jump over"
                )
            shown.append(UpcomingTicks(**common, ticks=ticks, breaches=found, note=note))
    return shown
