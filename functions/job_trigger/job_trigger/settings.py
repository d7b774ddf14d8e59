"""The trigger's configuration, read once from the environment template.yaml sets."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from clockless.config import ConfigurationError, env_int, env_str, ledger_table_name
from clockless.schedule.expressions import ScheduleExpressionError, ScheduleSpec
from clockless.schedule.local_clock import LocalClock, LocalClockError

# The ScheduleV2 properties that place a job's ticks: JOB_SCHEDULES carries exactly these, as the
# job's schedule declares them (rule trigger-schedules).
SCHEDULE_PROPERTIES = ("ScheduleExpression", "ScheduleExpressionTimezone", "StartDate", "EndDate")
# And, for a job with a local time (its Metadata's local_time and zones): which of its cron's instants are ticks.
LOCAL_TIME_PROPERTIES = ("LocalTime", "OperatingTimeZones")


@dataclass(frozen=True, slots=True)
class JobTriggerSettings:
    # Job name -> ARN of the function that runs its ticks; template.yaml is the source of truth.
    job_functions: Mapping[str, str]
    # Job name -> its schedule, as its ScheduleV2 event declares it: a request for an instant
    # that is not one of its ticks is refused unless it asks for an off-schedule run.
    job_schedules: Mapping[str, ScheduleSpec]
    ledger_table: str
    # Where each request id's first answer is kept for the window (the idempotency table).
    requests_table: str
    secret_id: str
    secret_max_age_seconds: int
    window: timedelta

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JobTriggerSettings:
        job_functions = _job_functions(env_str("JOB_FUNCTIONS", environ))
        return cls(
            job_functions=job_functions,
            job_schedules=_job_schedules(env_str("JOB_SCHEDULES", environ), jobs=job_functions),
            ledger_table=ledger_table_name(environ),
            requests_table=env_str("IDEMPOTENCY_TABLE_NAME", environ),
            secret_id=env_str("TRIGGER_SECRET_ID", environ),
            secret_max_age_seconds=env_int("TRIGGER_SECRET_MAX_AGE_SECONDS", environ, minimum=0),
            window=timedelta(minutes=env_int("TRIGGER_WINDOW_MINUTES", environ, minimum=1)),
        )


def _job_functions(raw: str) -> dict[str, str]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"environment variable JOB_FUNCTIONS is not JSON: {error.msg}") from None
    if not isinstance(parsed, dict) or not parsed:
        raise ConfigurationError('environment variable JOB_FUNCTIONS must be a JSON object {"<job>": "<function arn>"}')
    for job, arn in parsed.items():
        if not isinstance(arn, str) or not arn.startswith("arn:"):
            raise ConfigurationError(f"environment variable JOB_FUNCTIONS maps job {job!r} to {arn!r}, not an ARN")
    return dict(parsed)


def _job_schedules(raw: str, *, jobs: Mapping[str, str]) -> dict[str, ScheduleSpec]:
    """JOB_SCHEDULES: {"<job>": {"ScheduleExpression": ..., "ScheduleExpressionTimezone": ...,
    "StartDate": ..., "EndDate": ...}} for exactly the jobs of JOB_FUNCTIONS."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"environment variable JOB_SCHEDULES is not JSON: {error.msg}") from None
    if not isinstance(parsed, dict):
        raise ConfigurationError(
            'environment variable JOB_SCHEDULES must be a JSON object {"<job>": {"ScheduleExpression": ...}}'
        )
    if set(parsed) != set(jobs):
        missing, extra = sorted(set(jobs) - set(parsed)), sorted(set(parsed) - set(jobs))
        raise ConfigurationError(
            f"environment variable JOB_SCHEDULES must name the jobs of JOB_FUNCTIONS: missing {missing or 'none'}, "
            f"not a job {extra or 'none'}"
        )
    return {job: _schedule(job, properties) for job, properties in parsed.items()}


def _schedule(job: str, properties: Any) -> ScheduleSpec:
    where = f"environment variable JOB_SCHEDULES, job {job!r}"
    known = (*SCHEDULE_PROPERTIES, *LOCAL_TIME_PROPERTIES)
    if not isinstance(properties, dict) or not set(properties) <= set(known):
        raise ConfigurationError(f"{where}: must be an object of {', '.join(known)}")
    try:
        spec = ScheduleSpec.from_properties(properties, local_clock=_local_clock(properties, where))
    except ScheduleExpressionError as error:
        raise ConfigurationError(f"{where}: {error}") from None
    if spec.kind == "rate" and spec.start_date is None:
        # Its ticks count from the schedule's creation, which the trigger cannot read.
        raise ConfigurationError(f"{where}: {spec.expression} has no StartDate, so its ticks cannot be placed")
    return spec


def _local_clock(properties: Mapping[str, Any], where: str) -> LocalClock | None:
    at, zones = (properties.get(name) for name in LOCAL_TIME_PROPERTIES)
    if at is None and zones is None:
        return None
    if not isinstance(at, str) or not isinstance(zones, str):
        raise ConfigurationError(f"{where}: LocalTime and OperatingTimeZones go together, as strings")
    try:
        return LocalClock.parse(at, zones.split(","), where=f"{where}, LocalTime")
    except LocalClockError as error:
        raise ConfigurationError(str(error)) from None
