"""Rule `local-time`: the time-zone linter (`clockless schedules check`) as an architecture rule, so `clockless arch`
reports it beside the others: a year of every schedule's ticks against its declared zones."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.timezones.check import ScheduleCheck, check_template
from clockless_tools.timezones.rule import RULE_KEYS
from clockless_tools.timezones.suggest import describe_hours

LOCAL_TIME = "local-time"


# The fix when the schedule's configuration (not its ticks) is what is wrong.
_SEE_CHECK: Final = "run `clockless schedules check` for every tick and the UTC hours that fit"


def _check(project: Project) -> list[Violation]:
    report = check_template(project.template, start=datetime.now(UTC).date())
    violations = []
    for check in report.schedules:
        for group in check.groups():
            first, count = group.first, len(group.violations)
            where = "" if first.tick is None else f" e.g. {first.tick:%Y-%m-%dT%H:%MZ} in {first.zone}"
            violations.append(
                Violation(
                    LOCAL_TIME,
                    project.template_file,
                    f"{first.function_id}.Events.{first.event_id}",
                    f"job {first.job}: {first.rule}: {first.detail}{where} ({count} tick(s))",
                    _fix(check) if first.rule in RULE_KEYS else _SEE_CHECK,
                )
            )
    return violations


def _fix(check: ScheduleCheck) -> str:
    """The schedule that keeps the rule, for a tick that breaks it: what `schedules check` suggests."""
    if check.suggested_expression is not None and check.suggested_hours:
        return (
            f"ScheduleExpression: {check.suggested_expression} (a daily tick at "
            f"{describe_hours(check.suggested_hours, check.suggestion_minute)} UTC keeps the rule all year), "
            "or a local-time rule this schedule keeps"
        )
    return check.no_hour_advice or _SEE_CHECK


LOCAL_TIME_RULE = Rule(
    name=LOCAL_TIME,
    summary="every schedule is UTC and lands where its operating zones' local-time rule allows, all year",
    check=_check,
)
