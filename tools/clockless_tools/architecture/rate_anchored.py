"""Rule rate-anchored: every rate() schedule is anchored by a StartDate parameter, never a literal.

A rate() fires from its StartDate, or from whenever the schedule happened to be created (seconds
and all, and again from scratch when it is re-created), so it needs a StartDate for its ticks to
be known from the template. But CreateSchedule refuses a StartDate more than 5 minutes in the
past, so a literal one breaks the first deploy after that date that creates or replaces the
schedule. The anchor is therefore the Default of a String parameter (`StartDate: !Ref <Name>`):
the tools read it, and each deploy passes the first tick of that rhythm at or after the deploy
(`clockless schedules start-dates`, run by `make deploy`; template/rate_anchor.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from clockless.schedule.expressions import ScheduleExpressionError
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.rate_anchor import rate_schedules, start_date_parameter

RATE_ANCHORED: Final = "rate-anchored"
_FIX = (
    'StartDate: !Ref <Name>, with Parameters: <Name>: {Type: String, Default: "<the anchor, a whole minute in UTC, '
    'e.g. 2027-01-01T00:00:00Z>"}; make deploy passes it the next tick (clockless schedules start-dates)'
)


def check_rate_anchored(project: Project) -> Iterator[Violation]:
    template = project.template
    for schedule in rate_schedules(template):
        resource = f"{schedule.function_id}.Events.{schedule.event_id}"
        stated = schedule.properties.get("StartDate")
        name = start_date_parameter(schedule)
        if stated is None:
            yield Violation(
                RATE_ANCHORED,
                project.template_file,
                resource,
                f"{schedule.expression} has no StartDate: its ticks run from the moment the schedule was created "
                "(seconds and all), which the template does not know (and a re-created schedule shifts them)",
                _FIX,
            )
            continue
        if name is None:
            kind = "a literal" if not isinstance(stated, Mapping) else "an expression"
            yield Violation(
                RATE_ANCHORED,
                project.template_file,
                resource,
                f"StartDate is {kind} ({stated!r}): CreateSchedule refuses a StartDate more than 5 minutes in the "
                "past, so once that date has passed, a deploy that creates or replaces this schedule fails",
                _FIX,
            )
            continue
        parameter = (template.document.get("Parameters") or {}).get(name)
        if not isinstance(parameter, Mapping) or parameter.get("Type") != "String":
            yield Violation(
                RATE_ANCHORED, project.template_file, resource, f"StartDate parameter {name} is not a String", _FIX
            )
            continue
        try:
            schedule.spec(template)
        except (ScheduleExpressionError, TemplateError) as error:
            yield Violation(RATE_ANCHORED, project.template_file, resource, str(error), _FIX)


RATE_ANCHORED_RULE = Rule(
    RATE_ANCHORED,
    "every rate() schedule takes its StartDate from a String parameter whose Default (the anchor) is a whole "
    "minute; each deploy passes the next tick of that rhythm, so CreateSchedule never sees a past StartDate",
    check_rate_anchored,
)
