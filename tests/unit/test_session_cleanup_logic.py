from __future__ import annotations

from datetime import UTC, datetime, timedelta

from session_cleanup.logic import SessionRef, clean_up_empty_sessions

NOW = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)


class FakeSessionStore:
    def __init__(self, sessions: list[SessionRef], in_use: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.sessions = {s.session_id: s for s in sessions}
        self.in_use = set(in_use)

    def find_empty_sessions(
        self, *, started_after: datetime | None, started_at_or_before: datetime
    ) -> list[SessionRef]:
        return [
            s
            for s in self.sessions.values()
            if s.started_at <= started_at_or_before and (started_after is None or s.started_at > started_after)
        ]

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


def test_after_missed_ticks_the_range_widens_back_to_the_last_success() -> None:
    # Given the 09:00 and 10:00 ticks never ran, and 08:00 was the last success
    store = FakeSessionStore(
        [
            SessionRef("t", "covered-by-08:00", NOW - timedelta(hours=6)),
            SessionRef("t", "missed-at-09:00", NOW - timedelta(hours=4, minutes=30)),
            SessionRef("t", "missed-at-10:00", NOW - timedelta(hours=3, minutes=30)),
            SessionRef("t", "due-now", NOW - timedelta(hours=2)),
        ]
    )

    # When the 12:00 tick runs with no late-arrival margin
    result = clean_up_empty_sessions(store, now=NOW, grace=timedelta(hours=2), last_success=NOW - timedelta(hours=4))

    # Then it processes (08:00 - grace, 12:00 - grace]: the two missed hours and its own
    assert result.since == NOW - timedelta(hours=6)
    assert result.sessions_deleted == 3
    assert set(store.sessions) == {"covered-by-08:00"}


def test_late_arrival_margin_reaches_further_back() -> None:
    store = FakeSessionStore([SessionRef("t", "synced-late", NOW - timedelta(hours=10))])

    result = clean_up_empty_sessions(
        store,
        now=NOW,
        grace=timedelta(hours=2),
        last_success=NOW - timedelta(hours=1),
        late_arrival=timedelta(hours=24),
    )

    assert result.sessions_deleted == 1
