"""The CloudWatch dashboard stays in step with the template: every job's succeeded ticks against its
own period, every job's failures, every queue's depth, every function's errors and throttles, the
coordinators' and workers' duration against their timeout (a worker's also against where it hands
on), each work queue's messages in flight and each worker's running count against its mapping's
MaximumConcurrency. Each check is proven by a planted mistake."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from clockless_tools.operations.targets import dead_man_alarm_ids
from clockless_tools.template.expressions import nominal_period
from clockless_tools.template.model import Template


def _dashboard(template: Template) -> dict[str, Any]:
    body = template.resources["OperationsDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    # ${Logical} and ${Logical.Attribute} stand for the physical names: keep the logical id.
    return dict(json.loads(re.sub(r"\$\{([^}.]+)(\.[^}]+)?\}", r"\1", body)))


def _alarm_dimensions(template: Template, job: str) -> dict[str, str] | None:
    """The dimensions of the TickSucceeded metric the job's dead-man alarm watches (either shape)."""
    for logical_id in dead_man_alarm_ids(template, job):
        properties = template.resources[logical_id]["Properties"]
        metrics = [properties] + [q.get("MetricStat", {}).get("Metric", {}) for q in properties.get("Metrics", [])]
        for metric in metrics:
            if metric.get("MetricName") == "TickSucceeded":
                return {d["Name"]: d["Value"] for d in metric["Dimensions"]}
    return None


Metrics = list[tuple[dict[str, Any], list[Any]]]


def _of_job(metric: list[Any], job: str) -> bool:
    return "job" in metric and metric[metric.index("job") + 1] == job


def _job_problems(template: Template, job: str, metrics: dict[str, Metrics]) -> list[str]:
    problems = []
    succeeded = [(w, m) for w, m in metrics.get("TickSucceeded", []) if _of_job(m, job)]
    if not succeeded:
        problems.append(f"{job}: no TickSucceeded widget")
    alarmed = _alarm_dimensions(template, job)
    period = int(nominal_period(template.jobs[job].expression).total_seconds())
    for widget, metric in succeeded:
        shown = dict(zip(metric[2::2], metric[3::2], strict=True))
        if alarmed is not None and shown != alarmed:
            problems.append(f"{job}: TickSucceeded shown with {shown}, the dead-man alarm watches {alarmed}")
        if widget.get("period") != period:
            problems.append(f"{job}: TickSucceeded summed over {widget.get('period')} s, its period is {period} s")
    if not any(_of_job(m, job) for _, m in metrics.get("TickFailed", [])):
        problems.append(f"{job}: no TickFailed line")
    return problems


def dashboard_problems(template: Template) -> list[str]:
    metrics: dict[str, Metrics] = {}
    for widget in (w["properties"] for w in _dashboard(template)["widgets"]):
        for metric in widget.get("metrics", []):
            metrics.setdefault(metric[1], []).append((widget, metric))
    problems = [problem for job in template.jobs for problem in _job_problems(template, job, metrics)]
    shown_queues = {m[3] for _, m in metrics.get("ApproximateNumberOfMessagesVisible", [])}
    problems += [
        f"{q}: dead-letter queue depth not shown"
        for q in template.resources_of_type("AWS::SQS::Queue")
        if q not in shown_queues
    ]
    coordinators = {template.function_for_job(job).logical_id: template.function_for_job(job) for job in template.jobs}
    for function in {**coordinators, **template.worker_functions}.values():
        durations = [w for w, m in metrics.get("Duration", []) if m[3] == function.logical_id]
        if not durations:
            problems.append(f"{function.logical_id}: duration not shown")
        for widget in durations:
            lines = _lines(widget)
            if function.timeout * 1000 not in lines:
                problems.append(f"{function.logical_id}: duration shown without its {function.timeout} s timeout line")
    problems += _fan_out_problems(template, metrics)
    for metric, what in (("Throttles", "throttles"), ("Errors", "errors")):
        shown = {m[3] for _, m in metrics.get(metric, [])}
        problems += [f"{f}: {what} not shown" for f in template.functions if f not in shown]
    return problems


def _lines(widget: dict[str, Any]) -> list[Any]:
    return [a["value"] for a in widget.get("annotations", {}).get("horizontal", [])]


def _fan_out_problems(template: Template, metrics: dict[str, Metrics]) -> list[str]:
    """Each worker: where it hands on (Timeout - budget) beside its duration, its running count against the
    mapping's MaximumConcurrency; each work queue: its messages waiting and in flight."""
    problems = []
    for logical_id, worker in template.worker_functions.items():
        budget = int(worker.environment.get("WORK_TIME_BUDGET_SECONDS", 0))
        hand_off = (worker.timeout - budget) * 1000
        for widget in (w for w, m in metrics.get("Duration", []) if m[3] == logical_id):
            if hand_off not in _lines(widget):
                problems.append(f"{logical_id}: duration shown without its hand-off line at {hand_off // 1000} s")
        running = [w for w, m in metrics.get("ConcurrentExecutions", []) if m[3] == logical_id]
        if not running:
            problems.append(f"{logical_id}: workers running not shown")
        for mapping in template.mappings_of(logical_id):
            for widget in running:
                if mapping.maximum_concurrency not in _lines(widget):
                    problems.append(
                        f"{logical_id}: workers running shown without the {mapping.maximum_concurrency} "
                        "MaximumConcurrency line"
                    )
            for metric in ("ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible"):
                if mapping.source not in {m[3] for _, m in metrics.get(metric, [])}:
                    problems.append(f"{mapping.source}: work queue {metric} not shown")
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
        (
            '"service", "session-cleanup", "trigger"',
            '"service", "cleanup", "trigger"',
            "session-cleanup: TickSucceeded shown with",
        ),
        ('"TickSucceeded", "job", "window-generation"', '"TickSucceeded", "job", "nightly"', "window-generation: no"),
        ('"TickFailed", "job", "session-cleanup"', '"TickFailed", "job", "other"', "session-cleanup: no TickFailed"),
        ("${JobFailureQueue.QueueName}", "${Other.QueueName}", "JobFailureQueue: dead-letter queue depth"),
        ('"value": 120000', '"value": 60000', "WindowGenerationFunction: duration shown without its 120 s"),
        ('"Throttles", "FunctionName", "${JobTriggerFunction}"', '"Throttles", "FunctionName", "x"', "JobTrigger"),
        (
            '"Errors", "FunctionName", "${SessionCleanupWorkerFunction}"',
            '"Errors", "FunctionName", "x"',
            "SessionCleanupWorkerFunction: errors not shown",
        ),
        ('"value": 300000', '"value": 120000', "WindowGenerationWorkerFunction: duration shown without its 300 s"),
        ('"value": 270000', '"value": 240000', "SessionCleanupWorkerFunction: duration shown without its hand-off"),
        (
            '"ConcurrentExecutions", "FunctionName", "${WindowGenerationWorkerFunction}"',
            '"ConcurrentExecutions", "FunctionName", "x"',
            "WindowGenerationWorkerFunction: workers running not shown",
        ),
        (
            '"MaximumConcurrency", "value": 16',
            '"MaximumConcurrency", "value": 10',
            "SessionCleanupWorkerFunction: work",
        ),
        (
            '"ApproximateNumberOfMessagesNotVisible", "QueueName", "${SessionCleanupWorkQueue.QueueName}"',
            '"ApproximateNumberOfMessagesNotVisible", "QueueName", "x"',
            "SessionCleanupWorkQueue: work queue ApproximateNumberOfMessagesNotVisible not shown",
        ),
        (
            "${WindowGenerationWorkDeadLetterQueue.QueueName}",
            "${Other.QueueName}",
            "WindowGenerationWorkDeadLetterQueue: dead-letter queue depth",
        ),
    ],
)
def test_each_planted_mistake_is_caught(template: Template, edit: str, replacement: str, problem: str) -> None:
    problems = dashboard_problems(_planted(template, edit, replacement))

    assert any(p.startswith(problem) for p in problems), problems


def test_dead_man_alarms_are_found_in_either_shape(template: Template) -> None:
    def alarm(properties: dict[str, Any]) -> dict[str, Any]:
        return {"Type": "AWS::CloudWatch::Alarm", "Properties": properties}

    metric = {"Namespace": "Clockless", "MetricName": "TickSucceeded", "Dimensions": [{"Name": "job", "Value": "j"}]}
    document = {**copy.deepcopy(dict(template.document))}
    document["Resources"] = {
        "Single": alarm(metric),
        "MetricMath": alarm(
            {"Metrics": [{"Id": "s", "MetricStat": {"Metric": metric}}, {"Id": "f", "Expression": "x"}]}
        ),
        "OtherJob": alarm({**metric, "Dimensions": [{"Name": "job", "Value": "k"}]}),
        "Errors": alarm({**metric, "MetricName": "Errors"}),
    }

    assert dead_man_alarm_ids(Template(path=template.path, document=document), "j") == ["Single", "MetricMath"]
