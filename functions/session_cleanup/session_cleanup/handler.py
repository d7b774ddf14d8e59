"""Hourly empty-session cleanup: the tick's coordinator. It works out the tick's range and fans
it out, one message per empty-index shard; `session_cleanup.worker` deletes the sessions."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from clockless import JobRun, ScheduledJob
from clockless.fanout import FanOut
from session_cleanup.logic import cleanup_range
from session_cleanup.repository import EMPTY_INDEX_PARTITIONS, DynamoSessionStore, cleanup_params
from session_cleanup.settings import SessionCleanupSettings

JOB_NAME = "session-cleanup"
job = ScheduledJob(JOB_NAME)
work = FanOut(job, partitions=EMPTY_INDEX_PARTITIONS)


@functools.cache
def settings() -> SessionCleanupSettings:
    return SessionCleanupSettings.from_env()


@functools.cache
def session_store() -> DynamoSessionStore:
    return DynamoSessionStore(settings().sessions_table)


@job.handler
def lambda_handler(run: JobRun) -> Mapping[str, Any]:
    current = settings()
    # The tick's scheduled time, not the wall clock: a late or replayed delivery cleans up
    # exactly what its tick would have.
    due = cleanup_range(
        now=run.tick.scheduled_time,
        grace=current.grace,
        last_success=run.last_success,
        late_arrival=current.late_arrival,
    )
    return work.start(run, params=cleanup_params(due))
