"""`clockless run-now`: one manual tick with exactly a scheduled tick's semantics.

A tick is a scheduled time of the job's schedule: `--at` names one (default: the latest at or
before now). Another instant is refused with the scheduled times around it, unless the operator
asks for an off-schedule run explicitly, which the ledger records with trigger `off-schedule`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from clockless import MalformedTickError, Trigger, format_scheduled_time
from clockless.schedule.expressions import not_a_tick
from clockless.tick import parse_tick_time, reject_future, utc_now
from clockless_tools.operations.pause import guard_pause
from clockless_tools.operations.targets import JobTarget, OperationError, require_job, tick_event
from clockless_tools.template.model import Template


def run_now(
    target: JobTarget,
    template: Template,
    job: str,
    *,
    at: datetime | None = None,
    now: datetime | None = None,
    off_schedule: bool = False,
    override_pause: bool = False,
) -> dict[str, Any]:
    """A manual tick with the scheduler's payload contract: at `at`, or the schedule's latest tick at
    or before now. A tick from the future, an instant that is not a whole minute or not one of the
    schedule's ticks (unless `off_schedule`), or a paused job (unless `override_pause`, which the
    ledger records) is refused before anything is invoked."""
    scheduled_time, trigger = tick_to_run(target, template, job, at=at, now=now, off_schedule=off_schedule)
    guard_pause(
        target,
        job,
        override=override_pause,
        what="run-now",
        ticks=[scheduled_time],
        now=utc_now() if now is None else now,
    )
    return target.invoke(job, tick_event(target, job, scheduled_time, trigger))


def tick_to_run(
    target: JobTarget,
    template: Template,
    job: str,
    *,
    at: datetime | None = None,
    now: datetime | None = None,
    off_schedule: bool = False,
) -> tuple[datetime, Trigger]:
    """The scheduled time `run-now` names and the trigger the ledger records for it (see `run_now`)."""
    require_job(template, job)
    now = utc_now() if now is None else now
    spec = target.schedule_spec(job)
    if at is not None:
        try:
            # The same rule, and sentence, as the trigger's and the kit's: a tick is a whole minute.
            parse_tick_time(at.isoformat(), field="--at")
        except MalformedTickError as error:
            raise OperationError(f"--at {error.problem}") from None
    if at is None and not off_schedule:
        latest = spec.previous_tick(now)
        if latest is None:
            raise OperationError(f"{job} has no scheduled tick at or before now ({format_scheduled_time(now)})")
        at = latest
    # Only `--off-schedule` without `--at` takes now, to the minute.
    scheduled_time = (at or now).astimezone(UTC).replace(second=0, microsecond=0)
    try:
        reject_future(scheduled_time, now=now, field="--at")
    except MalformedTickError as error:
        raise OperationError(f"--at {error.problem}") from None
    on_schedule = spec.is_tick(scheduled_time)
    if not on_schedule and not off_schedule:
        raise OperationError(
            f"--at {not_a_tick(spec, job, scheduled_time)}; name one of them, or pass --off-schedule to run at this "
            "instant anyway (recorded with trigger off-schedule)"
        )
    return scheduled_time, Trigger.MANUAL if on_schedule else Trigger.OFF_SCHEDULE
