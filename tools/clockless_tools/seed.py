"""Demo data across tenants: programs due, catching up, not yet due and ended; sessions empty,
recent and in use. Every number the demo expects is derived from what was seeded."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from session_cleanup.logic import SessionRef
from session_cleanup.repository import DynamoSessionStore
from window_generation.logic import Program
from window_generation.repository import DynamoProgramStore


@dataclass(frozen=True)
class SeedPlan:
    tenants: int = 3
    programs_per_tenant: int = 40
    sessions_per_tenant: int = 60
    seed: int = 7


@dataclass(frozen=True)
class SeededData:
    active_programs: list[Program]
    ended_programs: list[Program]
    sessions: list[SessionRef]
    sessions_with_exercise: set[tuple[str, str]]


def windows_needed(program: Program, business_date: date) -> int:
    """How many windows a program needs to be covered on `business_date`: the oracle for effects."""
    count, end = 0, program.current_window_end
    while end <= business_date:
        end += timedelta(days=program.window_length_days)
        count += 1
    return count


def plan_data(plan: SeedPlan, *, business_date: date, now: datetime) -> SeededData:
    rng = random.Random(plan.seed)  # noqa: S311 - reproducible demo data, not secrets
    active: list[Program] = []
    ended: list[Program] = []
    sessions: list[SessionRef] = []
    in_use: set[tuple[str, str]] = set()
    for t in range(plan.tenants):
        tenant = f"tenant-{t + 1:02d}"
        for p in range(plan.programs_per_tenant):
            length = rng.choice([7, 14, 28])
            # From three weeks overdue (catching up) to ten days ahead (not due).
            end = business_date + timedelta(days=rng.randint(-21, 10))
            program = Program(tenant, f"program-{p + 1:04d}", length, end)
            (ended if rng.random() < 0.15 else active).append(program)
        for s in range(plan.sessions_per_tenant):
            started = now - timedelta(minutes=rng.randint(5, 48 * 60))
            session = SessionRef(tenant, f"session-{s + 1:05d}", started.replace(second=0, microsecond=0))
            sessions.append(session)
            if rng.random() < 0.3:
                in_use.add((tenant, session.session_id))
    return SeededData(active, ended, sessions, in_use)


def seed(data: SeededData, *, programs_table: str, windows_table: str, sessions_table: str) -> None:
    programs = DynamoProgramStore(programs_table, windows_table)
    programs.save_programs(data.active_programs, active=True)
    programs.save_programs(data.ended_programs, active=False)
    sessions = DynamoSessionStore(sessions_table)
    sessions.start_sessions(data.sessions)
    for tenant_id, session_id in sorted(data.sessions_with_exercise):
        sessions.log_exercise(tenant_id, session_id)
