"""Rule `dedupe-outlives-retries`: the idempotency record outlives every retry of a tick (scheduler and
Lambda asynchronous retries together)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.architecture.schedule_delivery import schedule_events

DEDUPE_OUTLIVES_RETRIES: Final = "dedupe-outlives-retries"

# Service defaults when a bound is not stated (EventBridge Scheduler; Lambda asynchronous invocation).
SCHEDULER_DEFAULT_MAX_EVENT_AGE: Final = 86400
LAMBDA_DEFAULT_MAX_EVENT_AGE: Final = 21600
# The variable the kit reads the idempotency record's lifetime from.
EXPIRY_VARIABLE: Final = "IDEMPOTENCY_EXPIRY_SECONDS"


def check_dedupe_outlives_retries(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.scheduled_functions.items():
        scheduler_age = max(
            project.literal_int((properties.get("RetryPolicy") or {}).get("MaximumEventAgeInSeconds"))
            or SCHEDULER_DEFAULT_MAX_EVENT_AGE
            for _, _, properties in schedule_events(fn)
        )
        lambda_age = project.literal_int(fn.event_invoke_config.get("MaximumEventAgeInSeconds"))
        lambda_age = LAMBDA_DEFAULT_MAX_EVENT_AGE if lambda_age is None else lambda_age
        retry_window = scheduler_age + lambda_age
        environment = fn.environment
        if EXPIRY_VARIABLE not in environment:
            yield Violation(
                DEDUPE_OUTLIVES_RETRIES,
                project.template_file,
                logical_id,
                f"{EXPIRY_VARIABLE} is not set: the idempotency record's lifetime is not stated",
                f'set {EXPIRY_VARIABLE}: "{retry_window}" or more in the function\'s Environment',
            )
            continue
        expiry = project.literal_int(environment[EXPIRY_VARIABLE])
        if expiry is None:
            yield Violation(
                DEDUPE_OUTLIVES_RETRIES,
                project.template_file,
                logical_id,
                f"{EXPIRY_VARIABLE} is not a literal number of seconds: it cannot be checked against retries",
                f'set {EXPIRY_VARIABLE}: "{retry_window}" or more',
            )
        elif expiry < retry_window:
            yield Violation(
                DEDUPE_OUTLIVES_RETRIES,
                project.template_file,
                logical_id,
                f"{EXPIRY_VARIABLE} {expiry} s is shorter than the retry window {retry_window} s "
                f"(scheduler {scheduler_age} s + Lambda async {lambda_age} s): a late retry runs the tick again",
                f'raise {EXPIRY_VARIABLE} to at least "{retry_window}"',
            )


DEDUPE_OUTLIVES_RETRIES_RULE = Rule(
    DEDUPE_OUTLIVES_RETRIES,
    "IDEMPOTENCY_EXPIRY_SECONDS >= scheduler MaximumEventAgeInSeconds + Lambda async MaximumEventAgeInSeconds",
    check_dedupe_outlives_retries,
)
