"""Rule `schedule-delivery`: every schedule is delivered in UTC, with a FlexibleTimeWindow, bounded
retries that with the window end before its next tick, and a dead-letter queue."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any, Final

from clockless.schedule.expressions import ScheduleExpressionError, nominal_period
from clockless_tools.architecture.latest_success import flexible_window_seconds
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.model import Function

SCHEDULE_DELIVERY: Final = "schedule-delivery"
# Builds one schedule's violation from a message and a fix.
_Report = Callable[[str, str], Violation]


# Scheduler's RetryPolicy ranges (CreateSchedule refuses a value outside them).
RETRY_ATTEMPTS: Final = (0, 185)
EVENT_AGE_MIN_SECONDS: Final = 60


@functools.cache
def _period(expression: str) -> timedelta:
    return nominal_period(expression)


def schedule_events(fn: Function) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    events = fn.properties.get("Events") or {}
    for event_id, event in events.items():
        if isinstance(event, Mapping) and event.get("Type") in ("ScheduleV2", "Schedule"):
            yield event_id, str(event["Type"]), event.get("Properties") or {}


def check_schedule_delivery(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.functions.items():
        for event_id, event_type, properties in schedule_events(fn):
            resource = f"{logical_id}.Events.{event_id}"

            def violation(message: str, fix: str, resource: str = resource) -> Violation:
                return Violation(SCHEDULE_DELIVERY, project.template_file, resource, message, fix)

            if event_type == "Schedule":
                yield violation(
                    "Type: Schedule is an EventBridge rule, which cannot state a time zone or a flexible window",
                    "use Type: ScheduleV2 (EventBridge Scheduler) with ScheduleExpressionTimezone: UTC",
                )
            else:
                yield from _check_zone_and_window(properties, violation)
            yield from _check_retry_policy(project, properties, violation)
            dead_letter = properties.get("DeadLetterConfig")
            if not (isinstance(dead_letter, Mapping) and ("Arn" in dead_letter or "Type" in dead_letter)):
                yield violation(
                    "no DeadLetterConfig: a tick the scheduler gives up on is lost without a trace",
                    "DeadLetterConfig: {Arn: !GetAtt <SchedulerDeadLetterQueue>.Arn}",
                )


def _check_zone_and_window(properties: Mapping[str, Any], violation: _Report) -> Iterator[Violation]:
    zone = properties.get("ScheduleExpressionTimezone")
    if zone != "UTC":
        stated = "is not stated" if zone is None else f"is {zone!r}"
        yield violation(
            f"ScheduleExpressionTimezone {stated}: in a local zone a tick is skipped or repeated on DST nights",
            "ScheduleExpressionTimezone: UTC, with the UTC time chosen for the operating zones",
        )
    window = properties.get("FlexibleTimeWindow")
    if not (isinstance(window, Mapping) and "Mode" in window):
        yield violation(
            "FlexibleTimeWindow is not stated: when a tick may fire is left to a default",
            'FlexibleTimeWindow: {Mode: "OFF"} (or FLEXIBLE with MaximumWindowInMinutes)',
        )
    elif flexible_window_seconds(properties) is None:
        yield violation(
            "FlexibleTimeWindow is FLEXIBLE without a literal MaximumWindowInMinutes: how late a tick fires is unknown",
            "MaximumWindowInMinutes: <1-1440>",
        )


def _check_retry_policy(project: Project, properties: Mapping[str, Any], violation: _Report) -> Iterator[Violation]:
    policy = properties.get("RetryPolicy")
    if not isinstance(policy, Mapping):
        yield violation(
            "no RetryPolicy: the scheduler retries 185 times over 24 hours, long after the next tick",
            "RetryPolicy: {MaximumRetryAttempts: N, MaximumEventAgeInSeconds: <shorter than the period>}",
        )
        return
    attempts = project.literal_int(policy.get("MaximumRetryAttempts"))
    if attempts is not None and not RETRY_ATTEMPTS[0] <= attempts <= RETRY_ATTEMPTS[1]:
        # cfn-lint passes a number a loop's Fn::FindInMap writes; CreateSchedule refuses it at deploy.
        yield violation(
            f"RetryPolicy.MaximumRetryAttempts {attempts} is outside Scheduler's range "
            f"{RETRY_ATTEMPTS[0]}-{RETRY_ATTEMPTS[1]}: the deploy fails",
            f"set MaximumRetryAttempts: {min(max(attempts, RETRY_ATTEMPTS[0]), RETRY_ATTEMPTS[1])} "
            f"(Scheduler's range: {RETRY_ATTEMPTS[0]}-{RETRY_ATTEMPTS[1]})",
        )
    max_age = project.literal_int(policy.get("MaximumEventAgeInSeconds"))
    if max_age is None:
        yield violation(
            "RetryPolicy states no literal MaximumEventAgeInSeconds: retries may land after the next tick",
            "set RetryPolicy.MaximumEventAgeInSeconds to a number shorter than the schedule's period",
        )
        return
    if max_age < EVENT_AGE_MIN_SECONDS:
        yield violation(
            f"RetryPolicy.MaximumEventAgeInSeconds {max_age} s is under Scheduler's minimum {EVENT_AGE_MIN_SECONDS} s: "
            "the deploy fails",
            f"raise MaximumEventAgeInSeconds to {EVENT_AGE_MIN_SECONDS}",
        )
    expression = properties.get("ScheduleExpression", properties.get("Schedule"))
    if not isinstance(expression, str):
        yield violation(
            "the schedule expression is not a literal string: its period cannot be checked",
            "write ScheduleExpression as cron(...) or rate(...)",
        )
        return
    if expression.strip().startswith("at("):
        return  # a one-time schedule has no next tick to collide with
    try:
        period = _period(expression)
    except ScheduleExpressionError as error:
        yield violation(f"ScheduleExpression cannot be evaluated: {error}", "fix the cron(...) or rate(...) expression")
        return
    period_seconds = int(period.total_seconds())
    # A tick fires up to its flexible window late, and is retried for MaximumEventAgeInSeconds after that.
    window = flexible_window_seconds(properties) or 0
    if window + max_age >= period_seconds:
        stated = f"flexible window {window} s + " if window else ""
        yield violation(
            f"{stated}RetryPolicy.MaximumEventAgeInSeconds {max_age} s is not shorter than the schedule's period "
            f"{period_seconds} s: a retry can land after the next tick",
            f"lower MaximumEventAgeInSeconds below {period_seconds - window}",
        )


SCHEDULE_DELIVERY_RULE = Rule(
    SCHEDULE_DELIVERY,
    "schedules state UTC, FlexibleTimeWindow, a RetryPolicy within Scheduler's ranges and shorter than the period, "
    "and a DeadLetterConfig",
    check_schedule_delivery,
)
