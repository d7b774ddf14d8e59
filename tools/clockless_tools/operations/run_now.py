"""`clockless run-now`: one manual tick with exactly a scheduled tick's semantics."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from clockless import MalformedTickError, Trigger
from clockless.tick import reject_future, utc_now
from clockless_tools.operations.targets import JobTarget, OperationError, require_job, tick_event
from clockless_tools.template.model import Template


def run_now(
    target: JobTarget, template: Template, job: str, *, at: datetime | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """A manual tick with the scheduler's payload contract: at `at`, or now truncated to the minute.
    A tick from the future is refused before anything is invoked, as the kit would refuse it."""
    require_job(template, job)
    now = utc_now() if now is None else now
    scheduled_time = (at or now).astimezone(UTC).replace(second=0, microsecond=0)
    try:
        reject_future(scheduled_time, now=now, field="--at")
    except MalformedTickError as error:
        raise OperationError(f"--at {error.problem}") from None
    return target.invoke(job, tick_event(target, job, scheduled_time, Trigger.MANUAL))
