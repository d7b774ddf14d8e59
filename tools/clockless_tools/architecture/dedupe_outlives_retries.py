"""Rule `dedupe-outlives-retries`: the idempotency record outlives every delivery of a tick (the minute's
precision, a flexible window, then scheduler and Lambda asynchronous retries together)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.latest_success import (
    PRECISION_SECONDS,
    flexible_window_seconds,
    lambda_max_event_age,
    scheduler_max_event_age,
)
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.architecture.schedule_delivery import schedule_events

DEDUPE_OUTLIVES_RETRIES: Final = "dedupe-outlives-retries"

# The variable the kit reads the idempotency record's lifetime from.
EXPIRY_VARIABLE: Final = "IDEMPOTENCY_EXPIRY_SECONDS"


def check_dedupe_outlives_retries(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.scheduled_functions.items():
        # The last delivery of a tick: precision, flexible window, then Scheduler's and Lambda's retries.
        windows = [flexible_window_seconds(properties) or 0 for _, _, properties in schedule_events(fn)]
        scheduler_age = max(scheduler_max_event_age(properties) for _, _, properties in schedule_events(fn))
        lambda_age = lambda_max_event_age(fn)
        window = max(windows, default=0)
        retry_window = PRECISION_SECONDS + window + scheduler_age + lambda_age
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
                f"(precision {PRECISION_SECONDS} s + flexible window {window} s + scheduler {scheduler_age} s + Lambda "
                f"async {lambda_age} s): a late retry runs the tick again",
                f'raise {EXPIRY_VARIABLE} to at least "{retry_window}"',
            )


DEDUPE_OUTLIVES_RETRIES_RULE = Rule(
    DEDUPE_OUTLIVES_RETRIES,
    "IDEMPOTENCY_EXPIRY_SECONDS >= invocation precision + flexible window + scheduler and Lambda async "
    "MaximumEventAgeInSeconds (defaults where unset)",
    check_dedupe_outlives_retries,
)
