"""How late a tick can still succeed: the sum the dead-man grace must cover, term by term.

A tick scheduled at T is handed to Lambda within the minute (the Scheduler guide: a schedule set
for 1:00 "will invoke the target API between 1:00:00 and 1:00:59, assuming that a flexible time
window is not set"), or anywhere in its `FlexibleTimeWindow` when one is set; Scheduler retries a
failed hand-off until `RetryPolicy.MaximumEventAgeInSeconds` (86,400 s when unset); Lambda retries
a failed asynchronous run until `EventInvokeConfig.MaximumEventAgeInSeconds` (21,600 s when unset);
the last attempt may run for the function's whole `Timeout`; and a fanned-out tick succeeds only
when its partitions are done, which its worker is expected to do within its declared
`expected_duration_seconds` per hop (the partitions run in parallel), times the hops it declares
(`expected_hops`, 1 when unset: a continuation is one more run); a partition whose run fails or
dies once (its whole `Timeout`) comes back after the kit's first backoff, or 10 s after its attempt
could end (the visibility every run bounds its message to: clockless.fanout.redelivery), and runs
again: the redelivery term. A death no longer waits the work queue's visibility timeout; only a
receive that never reaches a worker does, which the rule does not count (docs/alarms.md).

The dead-man-alarm rule demands a grace of at least this sum; dedupe-outlives-retries and
schedule-delivery use the delivery part of it (precision, window and both retry ages).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from clockless.fanout.retry import ATTEMPT_END_MARGIN_SECONDS, FIRST_BACKOFF_SECONDS
from clockless_tools.architecture.job_bounds import read_bounds, read_expected_duration, read_expected_hops
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function, Schedule, Template
from clockless_tools.template.queues import literal_int

PRECISION_SECONDS: Final = 59
# Service defaults when a bound is not stated (EventBridge Scheduler RetryPolicy; Lambda asynchronous invocation).
SCHEDULER_DEFAULT_MAX_EVENT_AGE: Final = 86400
LAMBDA_DEFAULT_MAX_EVENT_AGE: Final = 21600


@dataclass(frozen=True)
class Lateness:
    """Seconds each stage can add between a tick's scheduled time and its success."""

    precision: int
    window: int
    scheduler_retries: int
    lambda_retries: int
    last_run: int
    fan_out: int
    # A fanned-out tick: the continuations beyond its first hop, and one failed run redelivered.
    continuations: int = 0
    redelivery: int = 0

    @property
    def delivery(self) -> int:
        """The latest a delivery of the tick can reach the function."""
        return self.precision + self.window + self.scheduler_retries + self.lambda_retries

    @property
    def total(self) -> int:
        return self.delivery + self.last_run + self.fan_out + self.continuations + self.redelivery

    @property
    def minimum_grace_minutes(self) -> int:
        return math.ceil(self.total / 60)

    def describe(self) -> str:
        parts = [
            f"{self.precision} s invocation precision",
            f"{self.window} s flexible window",
            f"{self.scheduler_retries} s Scheduler retries",
            f"{self.lambda_retries} s Lambda async retries",
            f"{self.last_run} s last attempt's Timeout",
        ]
        if self.fan_out:
            parts.append(f"{self.fan_out} s fan-out (the worker's expected duration)")
            parts.append(f"{self.continuations} s continuations (its hops after the first)")
            parts.append(f"{self.redelivery} s redelivery (a failed or dead run's Timeout, then 10 s)")
        return " + ".join(parts) + f" = {self.total} s"


def flexible_window_seconds(properties: Mapping[str, Any]) -> int | None:
    """The schedule's flexible window in seconds: 0 when OFF; None when FLEXIBLE without a literal maximum."""
    window = properties.get("FlexibleTimeWindow")
    if not isinstance(window, Mapping) or window.get("Mode") != "FLEXIBLE":
        return 0
    minutes = literal_int(window.get("MaximumWindowInMinutes"))
    return None if minutes is None else minutes * 60


def scheduler_max_event_age(properties: Mapping[str, Any]) -> int:
    policy = properties.get("RetryPolicy")
    stated = literal_int(policy.get("MaximumEventAgeInSeconds")) if isinstance(policy, Mapping) else None
    return SCHEDULER_DEFAULT_MAX_EVENT_AGE if stated is None else stated


def lambda_max_event_age(function: Function) -> int:
    stated = literal_int(function.event_invoke_config.get("MaximumEventAgeInSeconds"))
    return LAMBDA_DEFAULT_MAX_EVENT_AGE if stated is None else stated


def latest_success(template: Template, schedule: Schedule) -> Lateness:
    """The terms for one schedule; TemplateError when a term cannot be read from the template."""
    function = template.function(schedule.function_id)
    window = flexible_window_seconds(schedule.properties)
    if window is None:
        raise TemplateError(
            f"{schedule.function_id}.Events.{schedule.event_id}: FlexibleTimeWindow is FLEXIBLE without a literal "
            "MaximumWindowInMinutes, so how late a tick can fire is unknown"
        )
    workers = list(template.workers_of(function.logical_id).values())
    hops = [(int(read_expected_duration(worker).total_seconds()), read_expected_hops(worker)) for worker in workers]
    return Lateness(
        precision=PRECISION_SECONDS,
        window=window,
        scheduler_retries=scheduler_max_event_age(schedule.properties),
        lambda_retries=lambda_max_event_age(function),
        last_run=function.timeout,
        fan_out=max((duration for duration, _ in hops), default=0),
        continuations=max((duration * (count - 1) for duration, count in hops), default=0),
        # a run that raised comes back after the first backoff; one that died, after its bound
        redelivery=max(
            (worker.timeout + max(FIRST_BACKOFF_SECONDS, ATTEMPT_END_MARGIN_SECONDS) for worker in workers), default=0
        ),
    )


def render_table(template: Template) -> str:
    """docs/alarms.md's table of each job's sum and the grace it declares (`clockless schedules
    latest-success`; `make docs` writes it in, so a new job's line is there without a hand edit)."""
    lines = [
        "| job | precision + window + Scheduler's retries + Lambda's retries + last run + fan-out"
        " + continuations + a failed partition's redelivery | "
        "grace (the least that covers it) |",
        "| --- | --- | --- |",
    ]
    for job, schedule in sorted(template.jobs.items()):
        lateness = latest_success(template, schedule)
        grace = int(read_bounds(template.function(schedule.function_id)).grace.total_seconds()) // 60
        terms = (
            lateness.precision, lateness.window, lateness.scheduler_retries, lateness.lambda_retries,
            lateness.last_run, lateness.fan_out, lateness.continuations, lateness.redelivery,
        )  # fmt: skip
        lines.append(
            f"| {job} | {' + '.join(f'{term:,}' for term in terms)} = {lateness.total:,} s | "
            f"{grace} min ({lateness.minimum_grace_minutes} min) |"
        )
    return "\n".join(lines)
