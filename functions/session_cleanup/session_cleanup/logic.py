"""Empty-session cleanup: delete sessions still empty a grace period after they started.

Plain Python: no boto3, no environment. The store is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SessionRef:
    tenant_id: str
    session_id: str
    started_at: datetime


class SessionStore(Protocol):
    def find_empty_sessions(
        self, *, started_after: datetime | None, started_at_or_before: datetime
    ) -> Iterable[SessionRef]:
        """Sessions with no logged exercise that started in (started_after, started_at_or_before]."""
        ...

    def delete_if_empty(self, session: SessionRef) -> bool:
        """Delete the session only if it is still empty; False if it gained an exercise or is gone."""
        ...


@dataclass(frozen=True, slots=True)
class CleanupResult:
    cutoff: datetime
    since: datetime | None
    candidates: int
    sessions_deleted: int
    kept_no_longer_empty: int

    def as_summary(self) -> dict[str, int | str | None]:
        return {
            "since": None if self.since is None else self.since.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cutoff": self.cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "candidates": self.candidates,
            "sessions_deleted": self.sessions_deleted,
            "kept_no_longer_empty": self.kept_no_longer_empty,
        }


@dataclass(frozen=True, slots=True)
class CleanupRange:
    """Sessions that started in (since, cutoff] are due for deletion if still empty."""

    since: datetime | None
    cutoff: datetime


def cleanup_range(
    *, now: datetime, grace: timedelta, last_success: datetime | None = None, late_arrival: timedelta = timedelta(0)
) -> CleanupRange:
    """The sessions whose grace ended in (last_success, now], for the ticks since the last success.

    After missed ticks the range simply widens, so the next success heals the gap. `late_arrival`
    widens it further back for sessions that reach the table after they started (offline
    clients). With no recorded success (first run, or the ledger's retention passed) there is no
    lower bound.
    """
    return CleanupRange(
        since=None if last_success is None else last_success - grace - late_arrival,
        cutoff=now - grace,
    )


def clean_up_empty_sessions(
    store: SessionStore,
    *,
    now: datetime,
    grace: timedelta,
    last_success: datetime | None = None,
    late_arrival: timedelta = timedelta(0),
) -> CleanupResult:
    """Delete every session of `cleanup_range` that is still empty, one request per session: the
    sequential path (the deployed handler fans the tick out instead)."""
    due = cleanup_range(now=now, grace=grace, last_success=last_success, late_arrival=late_arrival)
    candidates = deleted = kept = 0
    for session in store.find_empty_sessions(started_after=due.since, started_at_or_before=due.cutoff):
        candidates += 1
        if store.delete_if_empty(session):
            deleted += 1
        else:
            kept += 1
    return CleanupResult(
        cutoff=due.cutoff, since=due.since, candidates=candidates, sessions_deleted=deleted, kept_no_longer_empty=kept
    )
