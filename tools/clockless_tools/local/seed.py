"""Demo data across tenants: programs due, catching up, not yet due and ended; sessions empty,
recent and in use. Written through the platform's own repositories, reproducibly per seed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template
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


def plan_data(
    plan: SeedPlan, *, business_date: date, now: datetime, session_span: timedelta = timedelta(hours=48)
) -> SeededData:
    """Programs whose windows end from three weeks before `business_date` to ten days after it;
    sessions that started over the `session_span` before `now`."""
    span_minutes = max(6, int(session_span.total_seconds() // 60))
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
            started = now - timedelta(minutes=rng.randint(5, span_minutes))
            session = SessionRef(tenant, f"session-{s + 1:05d}", started.replace(second=0, microsecond=0))
            sessions.append(session)
            if rng.random() < 0.3:
                in_use.add((tenant, session.session_id))
    return SeededData(active, ended, sessions, in_use)


DEMO_TABLES = ("ProgramsTable", "WindowsTable", "SessionsTable")


def seed_demo_tables(
    template: Template,
    plan: SeedPlan,
    *,
    business_date: date,
    now: datetime,
    session_span: timedelta = timedelta(hours=48),
    names: LocalNames = LocalNames(),
) -> str | None:
    """Seed the demo tables through the platform's own repositories, when the template declares
    them (run inside the local environment). Returns what was seeded, None for other templates."""
    if not set(DEMO_TABLES) <= template.tables.keys():
        return None
    data = plan_data(plan, business_date=business_date, now=now, session_span=session_span)
    seed(
        data,
        programs_table=names.table_name("ProgramsTable"),
        windows_table=names.table_name("WindowsTable"),
        sessions_table=names.table_name("SessionsTable"),
    )
    programs = len(data.active_programs) + len(data.ended_programs)
    return f"{programs} programs and {len(data.sessions)} sessions across {plan.tenants} tenants"


def seed(data: SeededData, *, programs_table: str, windows_table: str, sessions_table: str) -> None:
    programs = DynamoProgramStore(programs_table, windows_table)
    programs.save_programs(data.active_programs, active=True)
    programs.save_programs(data.ended_programs, active=False)
    sessions = DynamoSessionStore(sessions_table)
    sessions.start_sessions(data.sessions)
    for tenant_id, session_id in sorted(data.sessions_with_exercise):
        sessions.log_exercise(tenant_id, session_id)
