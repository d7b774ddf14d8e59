"""The table in docs/alarms.md of when each job's dead-man alarm fires, computed from template.yaml
by the same simulation the dead-man-alarm rule runs.

`clockless schedules alarm-timing` prints it; `make docs` writes it into docs/alarms.md and
`clockless docs --check` fails when the page and the template disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from clockless_tools.architecture.alarm_timing import DeadManDefinition, Evaluation, simulate
from clockless_tools.architecture.dead_man_alarm import SIMULATED_AROUND, SUCCESS_METRIC
from clockless_tools.architecture.job_bounds import read_bounds
from clockless_tools.template.model import Template


def _duration(value: timedelta | None) -> str:
    if value is None:
        return "never"
    minutes = int(value.total_seconds()) // 60
    return f"{minutes // 60} h" if minutes % 60 == 0 and minutes >= 120 else f"{minutes} min"


def _definition(props: Mapping[str, Any]) -> DeadManDefinition | None:
    for query in props.get("Metrics") or []:
        stat = (query.get("MetricStat") or {}) if isinstance(query, Mapping) else {}
        if (stat.get("Metric") or {}).get("MetricName") == SUCCESS_METRIC:
            return DeadManDefinition(
                int(stat["Period"]), int(props["EvaluationPeriods"]), int(props["DatapointsToAlarm"])
            )
    return None


def render_table(template: Template) -> str:
    lines = [
        "| job | schedule | grace | alarm | fires after a missed tick | "
        "if the tick before succeeded at the end of its grace |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    alarms = [alarm.get("Properties") or {} for alarm in template.resources_of_type("AWS::CloudWatch::Alarm").values()]
    for job, schedule in sorted(template.jobs.items()):
        for props in alarms:
            definition = _definition(props)
            watched = [
                d.get("Value")
                for q in props.get("Metrics") or []
                for d in ((q.get("MetricStat") or {}).get("Metric") or {}).get("Dimensions") or []
                if d.get("Name") == "job"
            ]
            if definition is None or watched != [job]:
                continue
            grace = read_bounds(template.function(schedule.function_id)).grace
            timing = simulate(definition, schedule.spec(template), grace, around=SIMULATED_AROUND)
            complete, partial = timing.fires_after[Evaluation.COMPLETE], timing.fires_after[Evaluation.PARTIAL]
            period = _duration(timedelta(seconds=definition.period)).replace("60 min", "1 h")
            lines.append(
                f"| {job} | `{schedule.expression}` | {_duration(grace)} | "
                f"{definition.evaluation_periods} x {period} | {_duration(complete)} "
                f"({_duration(partial)} if the period in progress counts) | "
                f"{_duration(timing.fires_after_late_previous)} |"
            )
    return "\n".join(lines)
