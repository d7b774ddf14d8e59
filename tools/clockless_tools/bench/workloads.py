"""The workloads a tick is measured on, and the table layouts that hold them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from clockless_tools.bench.results import TENANT
from session_cleanup.logic import SessionRef
from session_cleanup.repository import SessionModel, session_item
from window_generation.logic import Program


@dataclass(frozen=True, slots=True)
class Workload:
    """Programs and sessions for one measurement. Counts are exact, so every effect is checked."""

    due_programs: int = 0  # each needs exactly one window on the business date...
    catching_up: int = 0  # ...except these first ones, a period further behind: two windows
    not_due_programs: int = 0
    ended_programs: int = 0
    expired_empty_sessions: int = 0  # empty past the grace period: cleanup deletes them
    recent_empty_sessions: int = 0  # empty, still inside the grace period
    sessions_in_use: int = 0
    # the tenants the items are spread over, round robin (1: every item under one tenant key)
    tenants: int = 1

    def tenant(self, index: int) -> str:
        return TENANT if self.tenants <= 1 else f"{TENANT}-{index % self.tenants:04d}"

    @property
    def windows_expected(self) -> int:
        return self.due_programs + min(self.catching_up, self.due_programs)

    @property
    def program_items(self) -> int:
        return self.due_programs + self.not_due_programs + self.ended_programs

    @property
    def session_items(self) -> int:
        return self.expired_empty_sessions + self.recent_empty_sessions + self.sessions_in_use

    @classmethod
    def programs_table(cls, due: int, table_items: int) -> Workload:
        """`due` programs to roll forward among `table_items`; the rest half not due, half ended."""
        rest = max(0, table_items - due)
        return cls(due_programs=due, not_due_programs=rest - rest // 2, ended_programs=rest // 2)

    @classmethod
    def sessions_table(cls, expired: int, table_items: int) -> Workload:
        """`expired` empty sessions to delete among `table_items`; of the rest, 9 in 10 in use."""
        rest = max(0, table_items - expired)
        return cls(expired_empty_sessions=expired, recent_empty_sessions=rest // 10, sessions_in_use=rest - rest // 10)


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a workload's dates fall: the window tick's business date, the cleanup tick's cutoff."""

    business_date: date
    cleanup_tick: datetime
    grace: timedelta

    def programs(self, workload: Workload) -> tuple[list[Program], list[Program]]:
        """(active, ended). Ids are fixed-width, so an item's size does not grow with the table."""
        active: list[Program] = []
        for i in range(workload.due_programs):
            behind = 7 if i < workload.catching_up else 0
            end = self.business_date - timedelta(days=i % 7 + behind)
            active.append(Program(workload.tenant(i), f"due-{i:07d}", 7, end))
        for i in range(workload.not_due_programs):
            active.append(
                Program(workload.tenant(i), f"later-{i:07d}", 7, self.business_date + timedelta(days=1 + i % 28))
            )
        ended = [
            Program(workload.tenant(i), f"ended-{i:07d}", 7, self.business_date - timedelta(days=i % 7))
            for i in range(workload.ended_programs)
        ]
        return active, ended

    def sessions(self, workload: Workload) -> tuple[list[SessionRef], list[tuple[SessionRef, int]]]:
        """(empty sessions, sessions in use with their exercise count)."""
        cutoff = self.cleanup_tick - self.grace
        grace_minutes = max(1, int(self.grace.total_seconds() // 60))
        empty = [
            SessionRef(workload.tenant(i), f"expired-{i:07d}", cutoff - timedelta(minutes=1 + i % 600))
            for i in range(workload.expired_empty_sessions)
        ]
        empty += [
            SessionRef(workload.tenant(i), f"recent-{i:07d}", self.cleanup_tick - timedelta(minutes=i % grace_minutes))
            for i in range(workload.recent_empty_sessions)
        ]
        in_use = [
            (
                SessionRef(workload.tenant(i), f"in-use-{i:07d}", self.cleanup_tick - timedelta(minutes=i % 2880)),
                1 + i % 5,
            )
            for i in range(workload.sessions_in_use)
        ]
        return empty, in_use


def empty_session_item(session: SessionRef) -> SessionModel:
    """A session as `DynamoSessionStore.start_sessions` writes it."""
    return session_item(session)


def session_in_use_item(session: SessionRef, exercises: int) -> SessionModel:
    """A session after `DynamoSessionStore.log_exercise`: counted, and out of the empty index."""
    return session_item(session, exercises)
