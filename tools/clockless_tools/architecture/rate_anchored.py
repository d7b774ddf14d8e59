"""Rule rate-anchored: every rate() schedule states its StartDate.

A rate() fires from its StartDate, or from whenever the schedule happened to be created (and
again from scratch when it is re-created). Only with a StartDate can status, backfill and
simulate know its ticks from the template, without asking AWS.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.expressions import ScheduleExpressionError
from clockless_tools.template.loader import TemplateError

RATE_ANCHORED: Final = "rate-anchored"


def check_rate_anchored(project: Project) -> Iterator[Violation]:
    for fn in project.template.scheduled_functions.values():
        for schedule in fn.schedules:
            if not schedule.expression.strip().startswith("rate("):
                continue
            resource = f"{fn.logical_id}.Events.{schedule.event_id}"
            if schedule.properties.get("StartDate") is None:
                yield Violation(
                    RATE_ANCHORED,
                    project.template_file,
                    resource,
                    f"{schedule.expression} has no StartDate: its ticks run from the moment the schedule was "
                    "created, which the template does not know (and a re-created schedule shifts them)",
                    'StartDate: "<a whole minute in UTC, e.g. 2027-01-01T00:00:00Z>"',
                )
                continue
            try:
                schedule.spec(project.template)
            except (ScheduleExpressionError, TemplateError) as error:
                yield Violation(RATE_ANCHORED, project.template_file, resource, str(error), "fix the StartDate")


RATE_ANCHORED_RULE = Rule(
    RATE_ANCHORED,
    "every rate() schedule states a StartDate on a whole minute, so its ticks are known from the template",
    check_rate_anchored,
)
