"""Rule `local-time`: the time-zone linter (`clockless schedules check`) as an architecture rule, so `clockless arch`
reports it beside the others: a year of every schedule's ticks against its declared zones."""

from __future__ import annotations

from datetime import UTC, datetime

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.timezones.check import check_template

LOCAL_TIME = "local-time"


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
                    "run `clockless schedules check` for every tick and the UTC hours that fit",
                )
            )
    return violations


LOCAL_TIME_RULE = Rule(
    name=LOCAL_TIME,
    summary="every schedule is UTC and lands where its operating zones' local-time rule allows, all year",
    check=_check,
)
