"""Rule ticks-on-the-minute: every schedule's ticks fall on whole minutes.

The kit accepts a tick only on a whole minute in UTC (docs/tick-contract.md, "Tick input"), so a
schedule whose scheduled times carry seconds would have every tick refused. `cron(...)` fires on
whole minutes by construction. A `rate(...)` counts from its `StartDate`, or from the moment the
schedule was created when it has none, so it needs a `StartDate` on a whole minute; an `at(...)`
names its own time, which must end in `:00`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation

TICKS_ON_THE_MINUTE: Final = "ticks-on-the-minute"
_AT: Final = re.compile(r"^at\((.+)\)$")


def check_ticks_on_the_minute(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.functions.items():
        for event_id, event in (fn.properties.get("Events") or {}).items():
            if not (isinstance(event, Mapping) and event.get("Type") == "ScheduleV2"):
                continue
            properties = event.get("Properties") or {}
            start_date = properties.get("StartDate")
            if isinstance(start_date, Mapping) and set(start_date) == {"Ref"}:
                # The anchor parameter's default (rule rate-anchored); each deploy passes a tick of its rhythm.
                parameters = project.template.document.get("Parameters") or {}
                declared = parameters.get(start_date["Ref"])
                start_date = declared.get("Default") if isinstance(declared, Mapping) else start_date
            problem = _problem(properties.get("ScheduleExpression"), start_date)
            if problem is not None:
                message, fix = problem
                yield Violation(
                    TICKS_ON_THE_MINUTE, project.template_file, f"{logical_id}.Events.{event_id}", message, fix
                )


def _problem(expression: Any, start_date: Any) -> tuple[str, str] | None:
    if not isinstance(expression, str):
        return None  # schedule-delivery reports an expression it cannot read
    expression = expression.strip()
    at = _AT.match(expression)
    if at is not None:
        if _on_the_minute(at.group(1)):
            return None
        return f"{expression} is not on a whole minute: the kit refuses its tick", "write it as at(yyyy-mm-ddThh:mm:00)"
    if expression.startswith("rate("):
        return _rate_problem(expression, start_date)
    return None


def _rate_problem(expression: str, start_date: Any) -> tuple[str, str] | None:
    fix = "set StartDate to a whole minute, e.g. 2026-01-01T00:00:00Z"
    if start_date is None:
        return (
            f"{expression} has no StartDate: it counts from the moment the schedule is created, seconds "
            "and all, and the kit refuses ticks off a whole minute",
            fix,
        )
    if isinstance(start_date, str) and _on_the_minute(start_date):
        return None
    return (
        f"StartDate {start_date!r} is not a literal time on a whole minute: {expression} would tick off "
        "the minute, and the kit refuses those ticks",
        fix,
    )


def _on_the_minute(text: str) -> bool:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return False
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.second == 0 and moment.microsecond == 0


TICKS_ON_THE_MINUTE_RULE = Rule(
    TICKS_ON_THE_MINUTE,
    "every schedule ticks on whole minutes: rate() from a whole-minute StartDate, at() at :00",
    check_ticks_on_the_minute,
)
