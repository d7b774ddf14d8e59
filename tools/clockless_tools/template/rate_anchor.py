"""A rate() schedule's anchor, and the StartDate each deploy gives it so the deploy is never refused.

CreateSchedule refuses a StartDate more than 5 minutes in the past ("The StartDate you specify
cannot be earlier than 5 minutes ago"), so a literal StartDate in template.yaml breaks the first
deploy after that date that creates or replaces the schedule. Whether UpdateSchedule applies the
same check is not documented (docs/schedules.md, "rate() anchoring"); the design does not depend
on it:

- template.yaml states the anchor once, as the Default of a String parameter, and the schedule's
  `StartDate: !Ref <Parameter>`. Status, backfill, simulate and the local runtime read that
  default: the ticks are anchor + k x period, known without asking AWS.
- every deploy passes the parameter the first tick of that rhythm at or after the deploy
  (`clockless schedules start-dates`, which `make deploy` runs): never in the past, so never
  refused, and on the same rhythm, so no tick moves and none is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from clockless_tools.template.model import Schedule, Template

# CreateSchedule: "The StartDate you specify cannot be earlier than 5 minutes ago."
CREATE_SCHEDULE_PAST_LIMIT: Final = timedelta(minutes=5)


def start_date_parameter(schedule: Schedule) -> str | None:
    """The parameter a schedule's StartDate is a `!Ref` to, if it is one."""
    value = schedule.properties.get("StartDate")
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        return str(value["Ref"])
    return None


def rate_schedules(template: Template) -> list[Schedule]:
    return [
        schedule
        for function in template.scheduled_functions.values()
        for schedule in function.schedules
        if schedule.expression.strip().startswith("rate(")
    ]


def deploy_start_dates(template: Template, now: datetime) -> dict[str, str]:
    """Each anchored rate() schedule's StartDate parameter, set to its first tick at or after `now`."""
    values: dict[str, str] = {}
    for schedule in rate_schedules(template):
        name = start_date_parameter(schedule)
        if name is None:
            continue  # rate-anchored reports it
        spec = schedule.spec(template)
        [first] = spec.next_ticks(now - timedelta(microseconds=1), 1)
        values[name] = first.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return values


def create_schedule_refusal(start_date: Any, now: datetime) -> str | None:
    """CreateSchedule's answer to a recurring schedule's StartDate at `now`: its error, or None.

    moto checks this only for cron() expressions (it looks for a `*`); AWS's message names no kind,
    so clockless applies it to rate() too."""
    if start_date is None:
        return None
    moment = start_date if isinstance(start_date, datetime) else datetime.fromisoformat(str(start_date))
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
    if now - moment > CREATE_SCHEDULE_PAST_LIMIT:
        return "ValidationException: The StartDate you specify cannot be earlier than 5 minutes ago."
    return None
