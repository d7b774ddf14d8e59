"""Demo data for `make run` and `clockless local seed`: programs across tenants, whose windows end
from three weeks before the range's first day (catching up) to ten days after it (not yet due),
some of them ended. Written through this job's own repository; the simulator finds this module
by its name (see docs/adding-a-job.md) and is never deployed code's caller."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import date, datetime, timedelta

from window_generation.logic import Program
from window_generation.repository import DynamoProgramStore, ProgramModel, program_key, programs_partition_key
from window_generation.settings import WindowGenerationSettings

PROGRAMS_PER_TENANT = 40
ENDED_SHARE = 0.15


def plan_programs(
    tenants: int, rng: random.Random, *, business_date: date, per_tenant: int = PROGRAMS_PER_TENANT
) -> tuple[list[Program], list[Program]]:
    """(active, ended) programs, the same for the same `rng` seed."""
    active: list[Program] = []
    ended: list[Program] = []
    for t in range(tenants):
        for p in range(per_tenant):
            length = rng.choice([7, 14, 28])
            end = business_date + timedelta(days=rng.randint(-21, 10))
            program = Program(f"tenant-{t + 1:02d}", f"program-{p + 1:04d}", length, end)
            (ended if rng.random() < ENDED_SHARE else active).append(program)
    return active, ended


def seed(*, environ: Mapping[str, str], tenants: int, rng: random.Random, start: datetime, end: datetime) -> str:
    """Seed the tables this job's settings name; `start`..`end` is the range its ticks will cover."""
    settings = WindowGenerationSettings.from_env(environ)
    active, ended = plan_programs(tenants, rng, business_date=start.date())
    store = DynamoProgramStore(settings.programs_table, settings.windows_table)
    store.save_programs(active, active=True)
    store.save_programs(ended, active=False)
    return f"{len(active) + len(ended)} programs"


def bad_rows(*, environ: Mapping[str, str], start: datetime, end: datetime) -> list[str]:
    """Rows this job cannot use, for `clockless simulate --bad-rows`: due programs written by
    another client, one without its window length (does not decode), one whose length is 0 days
    (a value the domain refuses) and one whose due date is `not-a-date` (its index key sorts after
    every date, so only the kit's read outside the key range finds it). Each fails alone; returns
    their keys as the kit names them in the ledger and the work DLQ."""
    settings = WindowGenerationSettings.from_env(environ)
    store = DynamoProgramStore(settings.programs_table, settings.windows_table)
    due = start.date() - timedelta(days=1)
    missing, zero, undated = (
        Program("tenant-bad", "program-no-length", 7, due),
        Program("tenant-bad", "program-zero-days", 7, due),
        Program("tenant-bad", "program-not-a-date", 7, due),
    )
    store.save_programs([missing, zero, undated])
    ProgramModel(programs_partition_key(missing.tenant_id, missing.program_id), missing.program_id).update(
        # Only the rows just written: a key this hook got wrong fails here instead of planting nothing.
        actions=[ProgramModel.window_length_days.remove()],
        condition=ProgramModel.program_id.exists(),
    )
    ProgramModel(programs_partition_key(zero.tenant_id, zero.program_id), zero.program_id).update(
        actions=[ProgramModel.window_length_days.set(0)],
        condition=ProgramModel.program_id.exists(),
    )
    ProgramModel(programs_partition_key(undated.tenant_id, undated.program_id), undated.program_id).update(
        actions=[ProgramModel.current_window_end.set("not-a-date")],
        condition=ProgramModel.program_id.exists(),
    )
    return [program_key(p.tenant_id, p.program_id) for p in (missing, zero, undated)]
