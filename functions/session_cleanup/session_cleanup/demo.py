"""Demo data for `make run` and `clockless local seed`: workout sessions across tenants, started
from two days before the range to its end (so every hourly tick finds sessions whose grace just
ended), about a third of them in use. Written through this job's own repository; the simulator
finds this module by its name (see docs/adding-a-job.md)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timedelta

from session_cleanup.logic import SessionRef
from session_cleanup.repository import DynamoSessionStore, SessionModel, session_key, sessions_partition_key
from session_cleanup.settings import SessionCleanupSettings

SESSIONS_PER_TENANT = 60
IN_USE_SHARE = 0.3
LEAD = timedelta(hours=48)


def plan_sessions(
    tenants: int, rng: random.Random, *, start: datetime, end: datetime, per_tenant: int = SESSIONS_PER_TENANT
) -> tuple[list[SessionRef], set[tuple[str, str]]]:
    """Sessions started between `start - LEAD` and `end`, and the (tenant, session) pairs in use."""
    span_minutes = max(6, int((end - start + LEAD).total_seconds() // 60))
    sessions: list[SessionRef] = []
    in_use: set[tuple[str, str]] = set()
    for t in range(tenants):
        tenant = f"tenant-{t + 1:02d}"
        for s in range(per_tenant):
            started = end - timedelta(minutes=rng.randint(5, span_minutes))
            session = SessionRef(tenant, f"session-{s + 1:05d}", started.replace(second=0, microsecond=0))
            sessions.append(session)
            if rng.random() < IN_USE_SHARE:
                in_use.add((tenant, session.session_id))
    return sessions, in_use


def seed(*, environ: Mapping[str, str], tenants: int, rng: random.Random, start: datetime, end: datetime) -> str:
    """Seed the table this job's settings name; `start`..`end` is the range its ticks will cover."""
    settings = SessionCleanupSettings.from_env(environ)
    sessions, in_use = plan_sessions(tenants, rng, start=start, end=end)
    store = DynamoSessionStore(settings.sessions_table)
    store.start_sessions(sessions)
    for tenant_id, session_id in sorted(in_use):
        store.log_exercise(tenant_id, session_id)
    return f"{len(sessions)} sessions"


def bad_rows(*, environ: Mapping[str, str], start: datetime, end: datetime) -> list[str]:
    """Rows this job cannot use, for `clockless simulate --bad-rows`: an empty session whose start
    sorts as due but is no instant (hour 25), as a row written by another client would be. Each
    fails alone; returns their keys as the kit names them in the ledger and the work DLQ."""
    settings = SessionCleanupSettings.from_env(environ)
    store = DynamoSessionStore(settings.sessions_table)  # binds the model to the table
    day = (start - LEAD).date()
    bad = SessionRef("tenant-bad", "session-hour-25", datetime.combine(day, datetime.min.time(), start.tzinfo))
    store.start_sessions([bad])
    SessionModel(sessions_partition_key(bad.tenant_id, bad.session_id), bad.session_id).update(
        # Only the row just written: a key this hook got wrong fails here instead of planting nothing.
        actions=[SessionModel.started_at.set(f"{day:%Y-%m-%d}T00:00:00+25:00")],
        condition=SessionModel.session_id.exists(),
    )
    return [session_key(bad)]
