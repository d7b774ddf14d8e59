"""The jobs a test runs, picked from what template.yaml declares rather than named: a test that
proves a kit path takes the first job with the shape it needs (hourly ticks, a fan-out), so it goes
on passing, and on costing one job, whatever jobs the project adds or renames."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from clockless.schedule.expressions import nominal_period
from clockless_tools.template.model import Template

PROJECT_ROOT = Path(__file__).resolve().parents[1]
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


@dataclass(frozen=True)
class Job:
    name: str  # the tick's `job`: subscription-expiry
    function_id: str  # its scheduled function: SubscriptionExpiryFunction
    package: str  # its package, and its samples' folder under events/
    worker_id: str | None  # its worker function, when it fans out
    period: timedelta  # the nominal gap between its ticks
    local_time_rule: Any  # its Metadata.clockless.local_time_rule: "none", or the rule its ticks keep
    tables: tuple[str, ...]  # its own tables (Mappings.Jobs.<Id>.Tables)
    shards: int = 0  # its workers' MaximumConcurrency, one per index shard (Mappings.Jobs.<Id>.Shards); 0 without

    @property
    def stem(self) -> str:
        """Its resources' logical id stem: SubscriptionExpiry."""
        return self.function_id.removesuffix("Function")

    @property
    def tick_sample(self) -> str:
        """Its scheduled tick's sample, relative to events/ (`clockless events` writes it)."""
        return f"{self.package}/tick.json"

    def sample(self, kind: str = "tick") -> dict[str, Any]:
        return json.loads((PROJECT_ROOT / "events" / self.package / f"{kind}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@functools.cache
def project_template() -> Template:
    return Template.load(PROJECT_ROOT / "template.yaml")


def jobs(template: Template | None = None) -> list[Job]:
    """Every job the template declares, in its order."""
    template = template or project_template()
    declared = []
    for name, schedule in template.jobs.items():
        function = template.function_for_job(name)
        workers = list(template.workers_of(function.logical_id))
        declared.append(
            Job(
                name=name,
                function_id=function.logical_id,
                package=function.package_dir,
                worker_id=workers[0] if workers else None,
                period=nominal_period(schedule.expression),
                local_time_rule=(function.metadata.get("clockless") or {}).get("local_time_rule"),
                tables=tuple(_own_tables(template, [function.logical_id, *workers])),
                shards=next((m.maximum_concurrency or 0 for w in workers[:1] for m in template.mappings_of(w)), 0),
            )
        )
    return declared


def _own_tables(template: Template, function_ids: list[str]) -> list[str]:
    for function_id in function_ids:
        declared = (template.function(function_id).metadata.get("clockless") or {}).get("tables")
        if declared:
            return [str(table) for table in declared]
    return []


def fanned_out(template: Template | None = None) -> list[Job]:
    """Every fanned-out job, the fewest partitions first: a test that proves a kit path on one job in
    `make test` (CI's slow tier the others) takes the first, since a tick costs its partitions' runs."""
    return sorted((job for job in jobs(template) if job.worker_id is not None), key=lambda job: job.shards)


def job_where(
    *,
    period: timedelta | None = None,
    fanned_out: bool | None = None,
    local_time_rule: bool | None = None,
    template: Template | None = None,
) -> Job:
    """The first declared job with this period, fan-out and (not) a local-time rule; a clear failure
    when there is none."""
    for job in jobs(template):
        if local_time_rule is not None and (job.local_time_rule not in (None, "none")) != local_time_rule:
            continue
        if period is not None and job.period != period:
            continue
        if fanned_out is not None and (job.worker_id is not None) != fanned_out:
            continue
        return job
    raise AssertionError(
        f"template.yaml declares no job with period={period} fanned_out={fanned_out} local_time_rule={local_time_rule}"
    )


# 07:30 in New York and Chicago, declared once (docs/time-zones.md): what `clockless new job --at 07:30
# --zones America/New_York,America/Chicago` writes, for a test that needs a job with a local time.
LOCAL_TIME_0730 = {
    "LocalTime": '"07:30"',
    "Schedule": "cron(30 11,12,13 * * ? *)",
    "OperatingTimeZones": "[America/New_York, America/Chicago]",
}


def declared(text: str, job: Job, keys: dict[str, str]) -> str:
    """template.yaml's text with the job's declaration (Mappings.Jobs) given these keys, its own lines
    for them replaced."""
    block = f"    {job.stem}:\n"
    start = text.index(block, text.index("  Jobs:\n")) + len(block)
    # The block ends at the next job's line (4 spaces in) or the blank line after the last job.
    end = min(found.start() for found in re.finditer(r"\n(?=    \S|\n)", text[start:])) + start
    body = "".join(
        line + "\n" for line in text[start:end].splitlines() if line.strip().split(":")[0] not in keys
    ) + "".join(f"      {key}: {value}\n" for key, value in keys.items())
    return text[:start] + body.rstrip("\n") + text[end:]
