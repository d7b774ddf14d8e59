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
    def find_empty_sessions(self, started_at_or_before: datetime) -> Iterable[SessionRef]:
        """Sessions with no logged exercise that started at or before the time."""
        ...

    def delete_if_empty(self, session: SessionRef) -> bool:
        """Delete the session only if it is still empty; False if it gained an exercise or is gone."""
        ...


@dataclass(frozen=True, slots=True)
class CleanupResult:
    cutoff: datetime
    candidates: int
    sessions_deleted: int
    kept_no_longer_empty: int

    def as_summary(self) -> dict[str, int | str]:
        return {
            "cutoff": self.cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "candidates": self.candidates,
            "sessions_deleted": self.sessions_deleted,
            "kept_no_longer_empty": self.kept_no_longer_empty,
        }


def clean_up_empty_sessions(store: SessionStore, *, now: datetime, grace: timedelta) -> CleanupResult:
    """Delete every session that started at least `grace` before `now` and is still empty."""
    cutoff = now - grace
    candidates = deleted = kept = 0
    for session in store.find_empty_sessions(started_at_or_before=cutoff):
        candidates += 1
        if store.delete_if_empty(session):
            deleted += 1
        else:
            kept += 1
    return CleanupResult(cutoff=cutoff, candidates=candidates, sessions_deleted=deleted, kept_no_longer_empty=kept)
