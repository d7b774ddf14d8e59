"""`clockless run-now`: one manual tick with exactly a scheduled tick's semantics."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from clockless import Trigger
from clockless_tools.operations.targets import JobTarget, require_job, tick_event
from clockless_tools.template.model import Template


def run_now(target: JobTarget, template: Template, job: str, *, at: datetime | None = None) -> dict[str, Any]:
    """A manual tick with the scheduler's payload contract: at `at`, or now truncated to the minute."""
    require_job(template, job)
    scheduled_time = (at or datetime.now(UTC)).astimezone(UTC).replace(second=0, microsecond=0)
    return target.invoke(job, tick_event(target, job, scheduled_time, Trigger.MANUAL))
