"""Hourly empty-session cleanup: thin handler over `logic.clean_up_empty_sessions`."""

from __future__ import annotations

import functools

from clockless import JobRun, ScheduledJob
from session_cleanup.logic import clean_up_empty_sessions
from session_cleanup.repository import DynamoSessionStore
from session_cleanup.settings import SessionCleanupSettings

JOB_NAME = "session-cleanup"
job = ScheduledJob(JOB_NAME)


@functools.cache
def _settings() -> SessionCleanupSettings:
    return SessionCleanupSettings.from_env()


@functools.cache
def _store() -> DynamoSessionStore:
    return DynamoSessionStore(_settings().sessions_table)


@job.handler
def lambda_handler(run: JobRun) -> dict[str, int | str | None]:
    settings = _settings()
    # The tick's scheduled time, not the wall clock: a late or replayed delivery cleans up
    # exactly what its tick would have.
    result = clean_up_empty_sessions(
        _store(),
        now=run.tick.scheduled_time,
        grace=settings.grace,
        last_success=run.last_success,
        late_arrival=settings.late_arrival,
    )
    return result.as_summary()
