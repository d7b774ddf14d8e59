from __future__ import annotations

from datetime import UTC, datetime, timedelta

from session_cleanup.logic import SessionRef, clean_up_empty_sessions

NOW = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)


class FakeSessionStore:
    def __init__(self, sessions: list[SessionRef], in_use: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.sessions = {s.session_id: s for s in sessions}
        self.in_use = set(in_use)

    def find_empty_sessions(self, started_at_or_before: datetime) -> list[SessionRef]:
        return [s for s in self.sessions.values() if s.started_at <= started_at_or_before]

    def delete_if_empty(self, session: SessionRef) -> bool:
        if session.session_id in self.in_use or session.session_id not in self.sessions:
            return False
        del self.sessions[session.session_id]
        return True


def test_only_sessions_older_than_the_grace_period_are_deleted() -> None:
    store = FakeSessionStore(
        [
            SessionRef("t", "old", NOW - timedelta(hours=3)),
            SessionRef("t", "at-limit", NOW - timedelta(hours=2)),
            SessionRef("t", "young", NOW - timedelta(minutes=119)),
        ]
    )

    result = clean_up_empty_sessions(store, now=NOW, grace=timedelta(hours=2))

    assert result.sessions_deleted == 2
    assert set(store.sessions) == {"young"}
    assert result.cutoff == NOW - timedelta(hours=2)


def test_a_session_that_gained_an_exercise_is_kept_and_counted() -> None:
    store = FakeSessionStore([SessionRef("t", "busy", NOW - timedelta(hours=5))], in_use={"busy"})

    result = clean_up_empty_sessions(store, now=NOW, grace=timedelta(hours=2))

    assert (result.sessions_deleted, result.kept_no_longer_empty) == (0, 1)
    assert set(store.sessions) == {"busy"}
