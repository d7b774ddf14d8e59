"""The CloudWatch dashboard stays in step with the template: every job's succeeded ticks against its
own period, every job's failures, every dead-letter queue, every function's duration against its
timeout and its throttles. Each check is proven by a planted mistake."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from clockless_tools.template.expressions import nominal_period
from clockless_tools.template.model import Template


def _dashboard(template: Template) -> dict[str, Any]:
    body = template.resources["OperationsDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    # ${Logical} and ${Logical.Attribute} stand for the physical names: keep the logical id.
    return dict(json.loads(re.sub(r"\$\{([^}.]+)(\.[^}]+)?\}", r"\1", body)))


def dashboard_problems(template: Template) -> list[str]:
    widgets = [w["properties"] for w in _dashboard(template)["widgets"]]
    problems = []

    def metrics(name: str) -> list[tuple[dict[str, Any], list[Any]]]:
        return [(w, m) for w in widgets for m in w.get("metrics", []) if m[1] == name]

    def of_job(metric: list[Any], job: str) -> bool:
        return "job" in metric and metric[metric.index("job") + 1] == job

    for job, schedule in template.jobs.items():
        succeeded = [(w, m) for w, m in metrics("TickSucceeded") if of_job(m, job)]
        if not succeeded:
            problems.append(f"{job}: no TickSucceeded widget")
        for widget, _ in succeeded:
            period = int(nominal_period(schedule.expression).total_seconds())
            if widget.get("period") != period:
                problems.append(f"{job}: TickSucceeded summed over {widget.get('period')} s, its period is {period} s")
        if not any(of_job(m, job) for _, m in metrics("TickFailed")):
            problems.append(f"{job}: no TickFailed line")
    queues = list(template.resources_of_type("AWS::SQS::Queue"))
    shown_queues = {m[3] for _, m in metrics("ApproximateNumberOfMessagesVisible")}
    problems += [f"{q}: dead-letter queue depth not shown" for q in queues if q not in shown_queues]
    scheduled = {template.function_for_job(job).logical_id: template.function_for_job(job) for job in template.jobs}
    for logical_id, function in scheduled.items():
        durations = [(w, m) for w, m in metrics("Duration") if m[3] == logical_id]
        if not durations:
            problems.append(f"{logical_id}: duration not shown")
        for widget, _ in durations:
            lines = [a["value"] for a in widget.get("annotations", {}).get("horizontal", [])]
            if function.timeout * 1000 not in lines:
                problems.append(f"{logical_id}: duration shown without its {function.timeout} s timeout line")
    for logical_id in template.functions:
        if not any(m[3] == logical_id for _, m in metrics("Throttles")):
            problems.append(f"{logical_id}: throttles not shown")
    return problems


def test_the_dashboard_matches_the_template(template: Template) -> None:
    assert dashboard_problems(template) == []


def _planted(template: Template, edit: str, replacement: str) -> Template:
    document = copy.deepcopy(template.document)
    sub = document["Resources"]["OperationsDashboard"]["Properties"]["DashboardBody"]
    assert edit in sub["Fn::Sub"]
    sub["Fn::Sub"] = sub["Fn::Sub"].replace(edit, replacement, 1)
    return Template(path=template.path, document=document)


@pytest.mark.parametrize(
    ("edit", "replacement", "problem"),
    [
        ('"period": 3600', '"period": 86400', "session-cleanup: TickSucceeded summed over 86400 s"),
        ('"TickSucceeded", "job", "window-generation"', '"TickSucceeded", "job", "nightly"', "window-generation: no"),
        ('"TickFailed", "job", "session-cleanup"', '"TickFailed", "job", "other"', "session-cleanup: no TickFailed"),
        ("${JobFailureQueue.QueueName}", "${Other.QueueName}", "JobFailureQueue: dead-letter queue depth"),
        ('"value": 120000', '"value": 60000', "WindowGenerationFunction: duration shown without its 120 s"),
        ('"Throttles", "FunctionName", "${JobTriggerFunction}"', '"Throttles", "FunctionName", "x"', "JobTrigger"),
    ],
)
def test_each_planted_mistake_is_caught(template: Template, edit: str, replacement: str, problem: str) -> None:
    problems = dashboard_problems(_planted(template, edit, replacement))

    assert any(p.startswith(problem) for p in problems), problems
