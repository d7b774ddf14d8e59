"""Rule `dead-man-alarm`: dead-man alarms derived from the same template as the schedules: every scheduled job has an
alarm on its TickSucceeded metric that fires after one schedule period without a success."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.expressions import nominal_period
from clockless_tools.template.model import Template

SUCCESS_METRIC = "TickSucceeded"
MAX_ALARM_PERIOD = 86400  # CloudWatch's longest period; longer schedules use several periods


@dataclass(frozen=True)
class AlarmProblem:
    job: str
    resource: str
    message: str
    fix: str


def expected_alarm_shape(expression: str) -> tuple[int, int]:
    """(Period, EvaluationPeriods) covering exactly one period of the schedule."""
    seconds = int(nominal_period(expression).total_seconds())
    period = min(seconds, MAX_ALARM_PERIOD)
    if seconds % period:
        raise ValueError(f"{expression}: period of {seconds} s is not a whole number of {period} s alarm periods")
    return period, seconds // period


def _dimensions(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {str(d.get("Name")): d.get("Value") for d in properties.get("Dimensions") or [] if isinstance(d, Mapping)}


def dead_man_alarm_problems(template: Template) -> list[AlarmProblem]:
    namespace = (
        template.function_globals.get("Environment", {})
        .get("Variables", {})
        .get("POWERTOOLS_METRICS_NAMESPACE", "Clockless")
    )
    alarms = template.resources_of_type("AWS::CloudWatch::Alarm")
    problems: list[AlarmProblem] = []
    for job, schedule in sorted(template.jobs.items()):
        candidates = {
            logical_id: alarm.get("Properties") or {}
            for logical_id, alarm in alarms.items()
            if (alarm.get("Properties") or {}).get("MetricName") == SUCCESS_METRIC
            and _dimensions(alarm.get("Properties") or {}).get("job") == job
        }
        if not candidates:
            problems.append(
                AlarmProblem(
                    job,
                    schedule.function_id,
                    f"no alarm on {SUCCESS_METRIC} with dimension job={job}",
                    f"add an AWS::CloudWatch::Alarm on {namespace}/{SUCCESS_METRIC} for job {job}",
                )
            )
            continue
        period, evaluations = expected_alarm_shape(schedule.expression)
        for logical_id, props in candidates.items():
            expected = {
                "Namespace": namespace,
                "Period": period,
                "EvaluationPeriods": evaluations,
                "DatapointsToAlarm": evaluations,
                "Statistic": "Sum",
                "ComparisonOperator": "LessThanThreshold",
                "Threshold": 1,
                "TreatMissingData": "breaching",
            }
            for name, value in expected.items():
                actual = props.get(name)
                if str(actual) != str(value):
                    problems.append(
                        AlarmProblem(
                            job,
                            logical_id,
                            f"{name} is {actual!r}, the schedule {schedule.expression} needs {value!r}",
                            f"set {name}: {value}",
                        )
                    )
            if _dimensions(props).get("service") != job:
                problems.append(
                    AlarmProblem(
                        job,
                        logical_id,
                        "dimension service must equal the job (the kit emits job and service)",
                        f"add dimension service={job}",
                    )
                )
            if not props.get("AlarmActions"):
                problems.append(AlarmProblem(job, logical_id, "the alarm notifies no one", "set AlarmActions"))
    return problems


DEAD_MAN_ALARM = "dead-man-alarm"


def _check(project: Project) -> list[Violation]:
    return [
        Violation(DEAD_MAN_ALARM, project.template_file, p.resource, f"job {p.job}: {p.message}", p.fix)
        for p in dead_man_alarm_problems(project.template)
    ]


DEAD_MAN_ALARM_RULE = Rule(
    name=DEAD_MAN_ALARM,
    summary="every scheduled job has a dead-man alarm on TickSucceeded whose period is its schedule's",
    check=_check,
)
