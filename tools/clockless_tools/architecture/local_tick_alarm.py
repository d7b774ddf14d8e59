"""Rule `local-tick-alarm`: every job with a local time (Metadata clockless.local_time, its
declaration's LocalTime) has the alarm that watches its zones one by one, and the grace the kit
judges them by is the job's own.

The kit sends `LocalTickMissed` for each zone whose latest local tick due has not succeeded by
LOCAL_TICK_GRACE_MINUTES (clockless.local_ticks); the job's dead-man alarm sees its zones'
successes as one stream, so a zone silent beside a working one raises nothing else. The datapoint
means something only if an alarm reads it (by job and service, Sum over 5 minutes above 0, quiet
when nothing is sent, with an action), and the grace must be the job's grace_minutes: shorter names
a tick that may still succeed, longer leaves a missed one unnamed past the dead-man alarm's bound.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless.local_ticks import METRIC_LOCAL_TICK_MISSED
from clockless_tools.architecture.job_bounds import read_bounds
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.loader import TemplateError

LOCAL_TICK_ALARM: Final = "local-tick-alarm"
GRACE_VARIABLE: Final = "LOCAL_TICK_GRACE_MINUTES"
# What the alarm must say, property by property (the loops' `${Job}LocalTickMissedAlarm`).
SHAPE: Final = {
    "Statistic": "Sum",
    "Threshold": 0,
    "ComparisonOperator": "GreaterThanThreshold",
    "TreatMissingData": "notBreaching",
}


def _watches(properties: Mapping[str, Any], job: str) -> bool:
    dimensions = {d.get("Name"): d.get("Value") for d in properties.get("Dimensions") or [] if isinstance(d, Mapping)}
    return properties.get("MetricName") == METRIC_LOCAL_TICK_MISSED and dimensions == {"job": job, "service": job}


def _check(project: Project) -> Iterator[Violation]:
    template = project.template
    alarms = {
        logical_id: resource.get("Properties") or {}
        for logical_id, resource in template.resources_of_type("AWS::CloudWatch::Alarm").items()
    }
    for job, schedule in sorted(template.jobs.items()):
        if schedule.local_time is None:
            continue
        function = template.function(schedule.function_id)
        try:
            grace = int(read_bounds(function).grace.total_seconds()) // 60
        except TemplateError:
            grace = None  # rule dead-man-alarm names the unreadable grace
        written = function.environment.get(GRACE_VARIABLE)
        if grace is not None and str(written) != str(grace):
            yield Violation(
                LOCAL_TICK_ALARM,
                project.template_file,
                function.logical_id,
                f"job {job} keeps {schedule.local_time} local and its {GRACE_VARIABLE} is {written or 'unset'}, "
                f"not its grace_minutes {grace}: the kit would judge its zones' ticks by another grace",
                f"{GRACE_VARIABLE}: !FindInMap [Jobs, !Ref Job, GraceMinutes, ...] (the loops' line)",
            )
        watching = {logical_id: props for logical_id, props in alarms.items() if _watches(props, job)}
        if not watching:
            yield Violation(
                LOCAL_TICK_ALARM,
                project.template_file,
                function.logical_id,
                f"job {job} keeps {schedule.local_time} local and no alarm watches its {METRIC_LOCAL_TICK_MISSED} "
                "(dimensions job and service): a zone whose tick never succeeds beside one that does raises nothing",
                "keep the loops' ${Job}LocalTickMissedAlarm (template.yaml, the jobs' loops)",
            )
        for logical_id, props in sorted(watching.items()):
            wrong = [f"{key} {props.get(key)!r}" for key, value in SHAPE.items() if props.get(key) != value]
            if not props.get("AlarmActions"):
                wrong.append("no AlarmActions")
            if wrong:
                yield Violation(
                    LOCAL_TICK_ALARM,
                    project.template_file,
                    logical_id,
                    f"job {job}'s {METRIC_LOCAL_TICK_MISSED} alarm has {', '.join(wrong)}",
                    "Statistic: Sum, Threshold: 0, ComparisonOperator: GreaterThanThreshold, "
                    "TreatMissingData: notBreaching, AlarmActions: [!Ref AlarmTopic]",
                )


LOCAL_TICK_ALARM_RULE = Rule(
    name=LOCAL_TICK_ALARM,
    summary="every job with a LocalTime has its LocalTickMissed alarm, and the kit judges its zones by its grace",
    check=_check,
)
