"""Rule failure-paths: no way for a scheduled tick to fail quietly.

A tick can fail in three places, and each must end somewhere an alarm watches:
- Scheduler cannot hand it to Lambda: the schedule's `DeadLetterConfig` queue;
- Lambda ran it and it failed past the async retries: the function's `EventInvokeConfig`
  `OnFailure` queue (bounded retries and event age, so the failure arrives while it matters);
- every failed attempt on the way: the function's `Errors` metric.
A worker (fed by an SQS event source mapping) is invoked synchronously by the poller: its failed
messages take the work queue's redrive path (rule work-queue-redrive), and its failed attempts
show in its own `Errors` alarm, which this rule asks of it too.
cfn-lint-serverless checks async failure destinations for some event types but leaves
`ScheduleV2` out, so this rule covers it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.model import Function, Template

FAILURE_PATHS: Final = "failure-paths"
# Lambda's own bounds for asynchronous invocation.
MAX_ASYNC_RETRIES: Final = 2
MAX_EVENT_AGE: Final = 21600
MIN_EVENT_AGE: Final = 60
QUEUE_METRICS: Final = frozenset({"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"})


def _alarms(template: Template) -> dict[str, Mapping[str, Any]]:
    return {
        logical_id: resource.get("Properties") or {}
        for logical_id, resource in template.resources_of_type("AWS::CloudWatch::Alarm").items()
    }


def _dimension(props: Mapping[str, Any], name: str) -> Any:
    return next((d.get("Value") for d in props.get("Dimensions") or [] if d.get("Name") == name), None)


def _queue_of(arn: Any, template: Template) -> str | None:
    """The logical id of the template's queue that `!GetAtt Queue.Arn` names; None otherwise."""
    if isinstance(arn, Mapping) and isinstance(arn.get("Fn::GetAtt"), list) and arn["Fn::GetAtt"][1:] == ["Arn"]:
        logical_id = str(arn["Fn::GetAtt"][0])
        if (template.resources.get(logical_id) or {}).get("Type") == "AWS::SQS::Queue":
            return logical_id
    return None


def queue_watched(queue: str, template: Template) -> bool:
    for props in _alarms(template).values():
        name = _dimension(props, "QueueName")
        if (
            props.get("Namespace") == "AWS/SQS"
            and props.get("MetricName") in QUEUE_METRICS
            and name == {"Fn::GetAtt": [queue, "QueueName"]}
            and _on_first_message(props)
            and props.get("AlarmActions")
        ):
            return True
    return False


def _on_first_message(props: Mapping[str, Any]) -> bool:
    """The alarm speaks at the first message, not after a backlog builds up."""
    threshold = props.get("Threshold")
    try:
        value = float(threshold)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    operator = props.get("ComparisonOperator")
    return (operator == "GreaterThanThreshold" and value < 1) or (
        operator == "GreaterThanOrEqualToThreshold" and value <= 1
    )


def function_alarms(template: Template, function_id: str, metric: str) -> list[Mapping[str, Any]]:
    return [
        props
        for props in _alarms(template).values()
        if props.get("Namespace") == "AWS/Lambda"
        and props.get("MetricName") == metric
        and _dimension(props, "FunctionName") == {"Ref": function_id}
    ]


def literal_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def check_failure_paths(project: Project) -> Iterator[Violation]:
    template = project.template
    for logical_id, fn in template.scheduled_functions.items():

        def violation(message: str, fix: str, resource: str = logical_id) -> Violation:
            return Violation(FAILURE_PATHS, project.template_file, resource, message, fix)

        yield from _check_invoke_config(fn, template, violation)
        for schedule in fn.schedules:
            where = f"{logical_id}.Events.{schedule.event_id}"
            dead_letter = (schedule.properties.get("DeadLetterConfig") or {}).get("Arn")
            queue = _queue_of(dead_letter, template)
            if queue is None:
                yield violation(
                    "the schedule's DeadLetterConfig names no queue of this template: an undeliverable tick "
                    "goes nowhere an alarm watches",
                    "DeadLetterConfig: {Arn: !GetAtt <Queue>.Arn}",
                    where,
                )
            elif not queue_watched(queue, template):
                yield violation(
                    f"the schedule's dead-letter queue {queue} is watched by no alarm: undeliverable ticks pile up "
                    "unseen",
                    f"add an AWS/SQS ApproximateNumberOfMessagesVisible alarm on !GetAtt {queue}.QueueName",
                    where,
                )
        yield from _check_errors_alarm(project, logical_id)
    for logical_id in template.worker_functions:
        if logical_id not in template.scheduled_functions:
            yield from _check_errors_alarm(project, logical_id)


def _check_errors_alarm(project: Project, logical_id: str) -> Iterator[Violation]:
    errors = [props for props in function_alarms(project.template, logical_id, "Errors") if props.get("AlarmActions")]
    if not errors:
        yield Violation(
            FAILURE_PATHS,
            project.template_file,
            logical_id,
            "no alarm with AlarmActions on the function's AWS/Lambda Errors: failed attempts are seen only once "
            "they have used up every retry",
            f"add an AWS/Lambda Errors alarm with FunctionName: !Ref {logical_id}",
        )


def _within_age(age: int | None) -> int:
    """The nearest age Lambda accepts (its maximum for a value that is no literal)."""
    return MAX_EVENT_AGE if age is None else min(max(age, MIN_EVENT_AGE), MAX_EVENT_AGE)


def _check_invoke_config(fn: Function, template: Template, violation: Any) -> Iterator[Violation]:
    config = fn.event_invoke_config
    if not config:
        yield violation(
            "no EventInvokeConfig: Lambda retries a failed tick twice over up to 6 hours and then drops it",
            "EventInvokeConfig: {MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: <N>, "
            "DestinationConfig: {OnFailure: {Type: SQS, Destination: !GetAtt <Queue>.Arn}}}",
        )
        return
    retries = literal_int(config.get("MaximumRetryAttempts"))
    if retries is None or not 0 <= retries <= MAX_ASYNC_RETRIES:
        yield violation(
            f"EventInvokeConfig.MaximumRetryAttempts is {config.get('MaximumRetryAttempts')!r}: "
            f"state a literal bound of 0 to {MAX_ASYNC_RETRIES}",
            "MaximumRetryAttempts: 2",
        )
    age = literal_int(config.get("MaximumEventAgeInSeconds"))
    if age is None or not MIN_EVENT_AGE <= age <= MAX_EVENT_AGE:
        yield violation(
            f"EventInvokeConfig.MaximumEventAgeInSeconds is {config.get('MaximumEventAgeInSeconds')!r}: state a "
            f"literal bound of {MIN_EVENT_AGE} to {MAX_EVENT_AGE} seconds",
            f"set EventInvokeConfig.MaximumEventAgeInSeconds: {_within_age(age)} "
            f"(Lambda's range: {MIN_EVENT_AGE}-{MAX_EVENT_AGE})",
        )
    on_failure = ((config.get("DestinationConfig") or {}).get("OnFailure")) or {}
    queue = _queue_of(on_failure.get("Destination"), template) if on_failure.get("Type") == "SQS" else None
    if queue is None:
        yield violation(
            "EventInvokeConfig has no OnFailure destination on a queue of this template: a tick that fails past "
            "Lambda's retries is dropped",
            "DestinationConfig: {OnFailure: {Type: SQS, Destination: !GetAtt <Queue>.Arn}}",
        )
    elif not queue_watched(queue, template):
        yield violation(
            f"the OnFailure queue {queue} is watched by no alarm: failed ticks pile up unseen",
            f"add an AWS/SQS ApproximateNumberOfMessagesVisible alarm on !GetAtt {queue}.QueueName",
        )


FAILURE_PATHS_RULE = Rule(
    FAILURE_PATHS,
    "each scheduled function has bounded async retries with an OnFailure queue, a schedule DLQ, both watched by "
    "alarms, and an Errors alarm; each worker an Errors alarm",
    check_failure_paths,
)
