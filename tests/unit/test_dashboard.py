"""The CloudWatch dashboards stay in step with the template: every job's succeeded ticks against its
own period, every job's failures, every queue's depth, every function's errors and throttles, the
coordinators' and workers' duration against their timeout (a worker's also against where it hands
on), each work queue's messages in flight and each worker's running count against its mapping's
MaximumConcurrency, on the shared page (OperationsDashboard) or the job's own (<Id>Dashboard, written
by the jobs' loops). Each check is proven by a planted mistake, planted into the job page it names."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from clockless.schedule.expressions import nominal_period
from clockless_tools.operations.targets import dead_man_alarm_ids
from clockless_tools.scaffold.schedule import page_period
from clockless_tools.template.model import Template


def _body(resource: Any) -> str:
    body = resource["Properties"]["DashboardBody"]
    return str(body["Fn::Sub"] if isinstance(body, dict) else body)


def _dashboards(template: Template) -> list[dict[str, Any]]:
    # ${Logical} and ${Logical.Attribute} stand for the physical names: keep the logical id.
    return [
        dict(json.loads(re.sub(r"\$\{([^}.]+)(\.[^}]+)?\}", r"\1", _body(resource))))
        for resource in template.resources_of_type("AWS::CloudWatch::Dashboard").values()
    ]


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
    # Its period, or a day for a job with a local time (each zone's one tick a day).
    period = page_period(template.jobs[job].spec(template))
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
    for widget in (w["properties"] for dashboard in _dashboards(template) for w in dashboard["widgets"]):
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


def test_the_dashboards_match_the_template(template: Template) -> None:
    assert dashboard_problems(template) == []


def _planted(template: Template, dashboard: str, edit: str, replacement: str) -> Template:
    document = copy.deepcopy(template.document)
    resource = document["Resources"][dashboard]
    body = _body(resource)
    assert edit in body, f"{dashboard}: no {edit!r} to plant over"
    planted = body.replace(edit, replacement, 1)
    properties = resource["Properties"]
    properties["DashboardBody"] = {"Fn::Sub": planted} if isinstance(properties["DashboardBody"], dict) else planted
    return Template(path=template.path, document=document)


def _first_fanned_out(template: Template) -> tuple[str, str]:
    """A job with workers (its name and id), the one the fan-out plants go into."""
    for job in template.jobs:
        function = template.function_for_job(job).logical_id
        if template.workers_of(function):
            return job, function.removesuffix("Function")
    raise AssertionError("no fanned-out job in the template")


# (what to replace on the job's page, with what, the problem's start); {job} and {id} name the job.
JOB_PLANTS = [
    ('"period": {period}, "view"', '"period": 7, "view"', "{job}: TickSucceeded summed over 7 s"),
    ('"service", "{job}", "trigger"', '"service", "other", "trigger"', "{job}: TickSucceeded shown with"),
    ('"TickSucceeded", "job", "{job}"', '"TickSucceeded", "job", "other"', "{job}: no TickSucceeded"),
    ('"TickFailed", "job", "{job}"', '"TickFailed", "job", "other"', "{job}: no TickFailed"),
    ('"value": 120000', '"value": 60000', "{id}Function: duration shown without its 120 s"),
    ('"Throttles", "FunctionName", "${{{id}Function}}"', '"Throttles", "FunctionName", "x"', "{id}Function: throttles"),
    (
        '"Errors", "FunctionName", "${{{id}WorkerFunction}}"',
        '"Errors", "FunctionName", "x"',
        "{id}WorkerFunction: errors",
    ),
    ('"value": 300000', '"value": 120000', "{id}WorkerFunction: duration shown without its 300 s"),
    ('"value": 270000', '"value": 240000', "{id}WorkerFunction: duration shown without its hand-off"),
    (
        '"ConcurrentExecutions", "FunctionName", "${{{id}WorkerFunction}}"',
        '"ConcurrentExecutions", "FunctionName", "x"',
        "{id}WorkerFunction: workers running not shown",
    ),
    ('"MaximumConcurrency", "value": {workers}', '"MaximumConcurrency", "value": 10', "{id}WorkerFunction: work"),
    (
        '"ApproximateNumberOfMessagesNotVisible", "QueueName", "${{{id}WorkQueue.QueueName}}"',
        '"ApproximateNumberOfMessagesNotVisible", "QueueName", "x"',
        "{id}WorkQueue: work queue ApproximateNumberOfMessagesNotVisible not shown",
    ),
    ("${{{id}WorkDeadLetterQueue.QueueName}}", "${{Other.QueueName}}", "{id}WorkDeadLetterQueue: dead-letter queue"),
]


@pytest.mark.parametrize(("edit", "replacement", "problem"), JOB_PLANTS, ids=[p[2].split(": ")[1] for p in JOB_PLANTS])
def test_each_planted_mistake_on_a_jobs_page_is_caught(
    template: Template, edit: str, replacement: str, problem: str
) -> None:
    job, stem = _first_fanned_out(template)
    period = int(nominal_period(template.jobs[job].expression).total_seconds())
    (workers,) = {m.maximum_concurrency for m in template.mappings_of(f"{stem}WorkerFunction")}
    (workers,) = {m.maximum_concurrency for m in template.mappings_of(f"{stem}WorkerFunction")}

    def fill(text: str) -> str:
        return text.format(job=job, id=stem, period=period, workers=workers)

    problems = dashboard_problems(_planted(template, f"{stem}Dashboard", fill(edit), fill(replacement)))

    assert any(p.startswith(fill(problem)) for p in problems), problems


@pytest.mark.parametrize(
    ("edit", "replacement", "problem"),
    [
        ("${JobFailureQueue.QueueName}", "${Other.QueueName}", "JobFailureQueue: dead-letter queue depth"),
        ('"Throttles", "FunctionName", "${JobTriggerFunction}"', '"Throttles", "FunctionName", "x"', "JobTrigger"),
    ],
)
def test_each_planted_mistake_on_the_shared_page_is_caught(
    template: Template, edit: str, replacement: str, problem: str
) -> None:
    problems = dashboard_problems(_planted(template, "OperationsDashboard", edit, replacement))

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
