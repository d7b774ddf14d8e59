"""bench/workloads.py: the workloads a tick is measured on."""

from __future__ import annotations

from clockless_tools.bench.workloads import Workload


def test_a_table_workload_keeps_the_work_fixed_and_fills_the_rest() -> None:
    programs = Workload.programs_table(due=50, table_items=100_000)
    sessions = Workload.sessions_table(expired=50, table_items=1_000)

    assert (programs.due_programs, programs.program_items) == (50, 100_000)
    assert programs.not_due_programs + programs.ended_programs == 99_950
    assert (sessions.expired_empty_sessions, sessions.session_items) == (50, 1_000)
    assert sessions.sessions_in_use > sessions.recent_empty_sessions
