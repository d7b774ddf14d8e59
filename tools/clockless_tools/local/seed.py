"""Demo data, job by job: each scheduled job seeds its own tables from a `demo.py` beside its
handler (`functions/<job>/<job>/demo.py`), found by that name; nothing here knows any job.

A job's demo module defines

    def seed(*, environ: Mapping[str, str], tenants: int, rng: random.Random,
             start: datetime, end: datetime) -> str

`environ` is the job function's environment as the local runtime gives it (its settings read
their table names from it), `rng` is seeded per job so the data is the same every run, and
`start`..`end` is the range the ticks will cover. It writes through the job's own repository
and returns what it wrote, e.g. "120 programs".

For `clockless simulate --bad-rows` it may also define

    def bad_rows(*, environ: Mapping[str, str], start: datetime, end: datetime) -> list[str]

which writes a few rows its ticks will find due but cannot use (a row that does not decode, a value
the domain refuses), as another client would, and returns their keys as the kit names them.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import Template

DEMO_MODULE: Final = "demo"
BAD_ROWS_HOOK: Final = "bad_rows"


class DemoSeed(Protocol):
    def __call__(
        self, *, environ: Mapping[str, str], tenants: int, rng: random.Random, start: datetime, end: datetime
    ) -> str: ...


class DemoBadRows(Protocol):
    def __call__(self, *, environ: Mapping[str, str], start: datetime, end: datetime) -> list[str]: ...


@dataclass(frozen=True)
class SeedPlan:
    tenants: int = 3
    seed: int = 7


@dataclass(frozen=True)
class SeededJob:
    job: str
    function_id: str
    summary: str | None  # None: the job has no demo module


def demo_module(template: Template, function_id: str) -> str | None:
    """`<package>.demo` when the function's package has a demo.py, else None."""
    fn = template.function(function_id)
    package = fn.handler.rpartition(".")[0].partition(".")[0]
    if not package or not (template.root / fn.code_uri / package / f"{DEMO_MODULE}.py").is_file():
        return None
    return f"{package}.{DEMO_MODULE}"


def seed_jobs(runtime: LocalLambdaRuntime, plan: SeedPlan, *, start: datetime, end: datetime) -> list[SeededJob]:
    """Run every scheduled job's demo seed (in the template's order), each in its function's environment."""
    seeded = []
    for job, schedule in runtime.template.jobs.items():
        module = demo_module(runtime.template, schedule.function_id)
        if module is None:
            seeded.append(SeededJob(job, schedule.function_id, None))
            continue
        with runtime.function_environment(schedule.function_id):  # its code on sys.path, its settings' variables
            seed: DemoSeed = importlib.import_module(module).seed
            summary = seed(
                environ=runtime.environment(schedule.function_id),
                tenants=plan.tenants,
                rng=random.Random(f"{plan.seed}:{job}"),  # noqa: S311 - reproducible demo data, not secrets
                start=start,
                end=end,
            )
        seeded.append(SeededJob(job, schedule.function_id, summary))
    return seeded


def describe(seeded: list[SeededJob], plan: SeedPlan) -> str | None:
    """One line: what each job seeded, or None when no job has a demo module."""
    parts = [f"{s.job}: {s.summary}" for s in seeded if s.summary is not None]
    return f"{'; '.join(parts)} (across {plan.tenants} tenants)" if parts else None


def plant_bad_rows(runtime: LocalLambdaRuntime, *, start: datetime, end: datetime) -> dict[str, list[str] | None]:
    """Every scheduled job's bad rows (its demo's `bad_rows`), by job: the keys planted, or None
    when its demo module has no such hook (or there is no demo module)."""
    planted: dict[str, list[str] | None] = {}
    for job, schedule in runtime.template.jobs.items():
        module = demo_module(runtime.template, schedule.function_id)
        if module is None:
            planted[job] = None
            continue
        with runtime.function_environment(schedule.function_id):
            hook: DemoBadRows | None = getattr(importlib.import_module(module), BAD_ROWS_HOOK, None)
            planted[job] = (
                None
                if hook is None
                else list(hook(environ=runtime.environment(schedule.function_id), start=start, end=end))
            )
    return planted
