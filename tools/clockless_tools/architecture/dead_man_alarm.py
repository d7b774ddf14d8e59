"""Rule `dead-man-alarm`: dead-man alarms derived from the same template as the schedules.

Every scheduled job has an alarm on the successes of its *scheduled* deliveries (TickSucceeded
with trigger=schedule: a manual run, an HTTP press or a backfill must not keep it quiet), over
`FILL(…, 0)` so that CloudWatch sees a zero, not a gap, for a period without success. Its
evaluation range covers the schedule's longest gap plus the grace the function declares
(`Metadata: clockless: grace_minutes`), which must cover the latest a tick can succeed
(`latest_success`: precision, flexible window, both retry ages, the last run, the fan-out).
The rule then runs the definition against simulated successes (`alarm_timing`): it must stay
quiet while every tick succeeds within its grace, and fire within the grace plus one alarm period after a missed tick.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from clockless.config import DEFAULT_METRICS_NAMESPACE
from clockless.schedule.expressions import ScheduleExpressionError, ScheduleSpec
from clockless_tools.architecture.alarm_timing import DeadManDefinition, Evaluation, Timing, simulate
from clockless_tools.architecture.job_bounds import DURATION_KEY, GRACE_KEY, METADATA_KEY, JobBounds, read_bounds
from clockless_tools.architecture.latest_success import latest_success
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template

SUCCESS_METRIC = "TickSucceeded"
SCHEDULED_TRIGGER = "schedule"
# The dimensions the kit puts on TickSucceeded; CloudWatch matches a metric on all of them.
SUCCESS_DIMENSIONS = frozenset({"job", "service", "trigger"})
SHORT_PERIOD = 300
LONG_PERIOD = 3600
# A fixed instant to simulate around, so the rule's answer does not depend on today's date.
SIMULATED_AROUND = datetime(2027, 1, 11, tzinfo=UTC)
_FILL = re.compile(r"^\s*FILL\(\s*(\w+)\s*,\s*0\s*\)\s*$")


@dataclass(frozen=True)
class AlarmProblem:
    job: str
    resource: str
    message: str
    fix: str


def expected_alarm_shape(spec: ScheduleSpec, grace: timedelta) -> tuple[int, int]:
    """(Period, EvaluationPeriods) whose range just covers the longest gap plus the grace: 5-minute
    periods while that fits CloudWatch's one-day limit for short periods, hours beyond it."""
    span = int((spec.longest_gap() + grace).total_seconds())
    period = SHORT_PERIOD if span <= 86400 else LONG_PERIOD
    return period, math.ceil(span / period)


@functools.lru_cache(maxsize=64)
def _timing(definition: DeadManDefinition, spec: ScheduleSpec, grace: timedelta) -> Timing:
    return simulate(definition, spec, grace, around=SIMULATED_AROUND)


def fire_bound(spec: ScheduleSpec, grace: timedelta, period: int) -> timedelta:
    """The latest a well-shaped alarm fires after a missed tick (the tick before it on time): the
    evaluation range (longest gap plus grace, in whole periods) and one period after the tick before
    it. For a schedule whose gaps differ (weekdays; a local time in two zones, ticks an hour apart
    then 23 hours) that tick may be only the shortest gap earlier, so the bound counts from it."""
    step = timedelta(seconds=period)
    return step * math.ceil((spec.longest_gap() + grace) / step) - spec.nominal_period() + step


def _dimensions(metric: Mapping[str, Any]) -> dict[str, str]:
    return {str(d.get("Name")): str(d.get("Value")) for d in metric.get("Dimensions") or [] if isinstance(d, Mapping)}


def _metric_name(query: Any) -> Any:
    return (
        ((query.get("MetricStat") or {}).get("Metric") or {}).get("MetricName") if isinstance(query, Mapping) else None
    )


def _success_queries(properties: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [q for q in properties.get("Metrics") or [] if _metric_name(q) == SUCCESS_METRIC]


def _watched_job(properties: Mapping[str, Any]) -> str | None:
    if properties.get("MetricName") == SUCCESS_METRIC:
        return _dimensions(properties).get("job")
    for query in _success_queries(properties):
        return _dimensions(query["MetricStat"]["Metric"]).get("job")
    return None


def dead_man_alarm_problems(template: Template) -> list[AlarmProblem]:
    alarms = template.resources_of_type("AWS::CloudWatch::Alarm")
    problems: list[AlarmProblem] = []
    for job, schedule in sorted(template.jobs.items()):
        function = template.function(schedule.function_id)
        try:
            spec = schedule.spec(template)
        except ScheduleExpressionError as error:
            problems.append(AlarmProblem(job, schedule.function_id, str(error), "fix the schedule"))
            continue
        if spec.kind == "at":
            continue  # one tick: nothing to be silent between
        try:
            bounds = read_bounds(function)
        except TemplateError as error:
            problems.append(
                AlarmProblem(
                    job,
                    function.logical_id,
                    f"{error}: the dead-man alarm needs the grace after which a tick counts as missed",
                    f"declare Metadata.{METADATA_KEY}.{GRACE_KEY} and {DURATION_KEY}",
                )
            )
            continue
        try:
            lateness = latest_success(template, schedule)
        except TemplateError as error:
            problems.append(AlarmProblem(job, function.logical_id, str(error), "state MaximumWindowInMinutes"))
            continue
        if bounds.grace.total_seconds() < lateness.total:
            problems.append(
                AlarmProblem(
                    job,
                    function.logical_id,
                    f"{GRACE_KEY} {int(bounds.grace.total_seconds()) // 60} is shorter than the latest a tick can "
                    f"succeed ({lateness.describe()}): a tick that succeeds that late would raise the dead-man alarm",
                    f"raise {GRACE_KEY} to at least {lateness.minimum_grace_minutes}",
                )
            )
        candidates = {
            logical_id: alarm.get("Properties") or {}
            for logical_id, alarm in alarms.items()
            if _watched_job(alarm.get("Properties") or {}) == job
        }
        if not candidates:
            problems.append(
                AlarmProblem(
                    job,
                    schedule.function_id,
                    f"no alarm on {SUCCESS_METRIC} with dimension job={job}",
                    f"add an AWS::CloudWatch::Alarm on FILL({SUCCESS_METRIC} Sum, 0) for job {job}, trigger schedule",
                )
            )
            continue
        for logical_id, props in candidates.items():
            problems.extend(
                AlarmProblem(job, logical_id, message, fix)
                for message, fix in _alarm_problems(template, job, props, spec, bounds)
            )
    return problems


def _alarm_problems(
    template: Template, job: str, props: Mapping[str, Any], spec: ScheduleSpec, bounds: JobBounds
) -> list[tuple[str, str]]:
    namespace = (
        template.function_globals.get("Environment", {})
        .get("Variables", {})
        .get("POWERTOOLS_METRICS_NAMESPACE", DEFAULT_METRICS_NAMESPACE)
    )
    period, evaluations = expected_alarm_shape(spec, bounds.grace)
    queries = _success_queries(props)
    filled = [
        match.group(1)
        for q in props.get("Metrics") or []
        if isinstance(q, Mapping) and (match := _FILL.match(str(q.get("Expression"))))
    ]
    if len(queries) != 1 or filled != [queries[0].get("Id")]:
        return [
            (
                f"does not alarm on FILL({SUCCESS_METRIC}, 0): without FILL, CloudWatch evaluates older real "
                "datapoints in place of missing ones, and a silent schedule can stay OK",
                f"Metrics: [{{Id: succeeded, MetricStat: {SUCCESS_METRIC} Sum}}, "
                "{Id: filled, Expression: FILL(succeeded, 0), ReturnData: true}]",
            )
        ]
    found: list[tuple[str, str]] = []
    fill_query = next(q for q in props["Metrics"] if isinstance(q, Mapping) and _FILL.match(str(q.get("Expression"))))
    if fill_query.get("ReturnData") is False or queries[0].get("ReturnData") is not False:
        found.append(
            (
                "the alarm must evaluate the FILL expression: ReturnData true on it and false on the raw metric",
                "ReturnData: false on the TickSucceeded query, true on the FILL expression",
            )
        )
    stat = queries[0]["MetricStat"]
    metric = stat.get("Metric") or {}
    dimensions = _dimensions(metric)
    if set(dimensions) != SUCCESS_DIMENSIONS or dimensions.get("trigger") != SCHEDULED_TRIGGER:
        found.append(
            (
                f"watches dimensions {dimensions}, not the scheduled deliveries' series: the kit emits "
                f"{SUCCESS_METRIC} with job, service and trigger, and only trigger={SCHEDULED_TRIGGER} proves the "
                "schedule fires (a manual run, HTTP press or backfill must not keep the alarm quiet)",
                f"Dimensions: job={job}, service={job}, trigger={SCHEDULED_TRIGGER}",
            )
        )
    if dimensions.get("service") not in (None, job):
        found.append(("dimension service must equal the job (the kit emits job and service)", f"service={job}"))
    expected: dict[str, Any] = {
        "Namespace": (metric.get("Namespace"), namespace),
        "Stat": (stat.get("Stat"), "Sum"),
        "ComparisonOperator": (props.get("ComparisonOperator"), "LessThanThreshold"),
        "Threshold": (props.get("Threshold"), 1),
        "TreatMissingData": (props.get("TreatMissingData"), "breaching"),
    }
    for name, (actual, value) in expected.items():
        if str(actual) != str(value):
            found.append((f"{name} is {actual!r}; a dead-man alarm needs {value!r}", f"set {name}: {value}"))
    try:
        definition = DeadManDefinition(
            period=int(stat.get("Period")),
            evaluation_periods=int(props["EvaluationPeriods"]),
            datapoints_to_alarm=int(props.get("DatapointsToAlarm", props["EvaluationPeriods"])),
        )
    except (KeyError, TypeError, ValueError):
        return [*found, ("Period, EvaluationPeriods and DatapointsToAlarm must be literal numbers", "write them out")]
    shape = f"Period: {period}, EvaluationPeriods: {evaluations}, DatapointsToAlarm: {evaluations}"
    limit = definition.limit_problem()
    if limit is not None:
        return [*found, (limit, shape)]
    if definition.datapoints_to_alarm != definition.evaluation_periods:
        found.append(
            (
                f"DatapointsToAlarm {definition.datapoints_to_alarm} of {definition.evaluation_periods}: one success "
                "in the range must keep the alarm OK, so every datapoint must breach",
                f"set DatapointsToAlarm: {definition.evaluation_periods}",
            )
        )
        return found
    timing = _timing(definition, spec, bounds.grace)
    gap_grace = f"the schedule's longest gap {spec.longest_gap()} plus grace {bounds.grace}"
    if timing.false_alarm is not None:
        found.append(
            (
                f"fires at {timing.false_alarm:%Y-%m-%dT%H:%MZ} in a simulation where every tick succeeds within its "
                f"grace: Period x EvaluationPeriods ({definition.span}) is shorter than {gap_grace}",
                shape,
            )
        )
    bound = fire_bound(spec, bounds.grace, definition.period)
    fired = timing.fires_after[Evaluation.COMPLETE]
    if fired is None or fired > bound:
        when = "never fires" if fired is None else f"fires {fired} after"
        found.append(
            (
                f"{when} a missed tick in a simulated day of missing data; it must fire within {bound} "
                f"({gap_grace}, rounded up to whole {definition.period} s periods, plus one period"
                + (
                    ""
                    if spec.nominal_period() == spec.longest_gap()
                    else f", after the tick before it, which may be only {spec.nominal_period()} earlier"
                )
                + ")",
                shape,
            )
        )
    if not props.get("AlarmActions"):
        found.append(("the alarm notifies no one", "set AlarmActions"))
    return found


DEAD_MAN_ALARM = "dead-man-alarm"


def _check(project: Project) -> list[Violation]:
    return [
        Violation(DEAD_MAN_ALARM, project.template_file, p.resource, f"job {p.job}: {p.message}", p.fix)
        for p in dead_man_alarm_problems(project.template)
    ]


DEAD_MAN_ALARM_RULE = Rule(
    name=DEAD_MAN_ALARM,
    summary=(
        "every scheduled job has a dead-man alarm on FILL(TickSucceeded, 0) of trigger=schedule that stays quiet "
        "while ticks succeed within the declared grace and fires within grace + one period of a missed tick"
    ),
    check=_check,
)
