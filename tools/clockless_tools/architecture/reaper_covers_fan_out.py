"""Rule `reaper-covers-fan-out`: every fanned-out job's stuck ticks are settled by the tick reaper,
at the job's own bound.

A fanned-out tick whose partition message dies where no code of the kit runs after (its last run
killed, a receive that never reaches a worker, a buffered tick's start that dies) settles only by
the tick reaper (clockless.reaper), which reads the jobs it settles and their bounds from one
line, `REAPED_JOBS` (`<job>=<minutes>,...`). A fanned-out job missing from it would keep such a
tick `started` for ever; a bound other than the job's `grace_minutes` would settle a healthy tick
too early (shorter) or later than the dead-man alarm says it could still succeed (longer). Neither
can be seen by cfn-lint nor by a test of one job: the line and the jobs are in different places.
The reaper is the scheduled function whose handler imports `clockless.reaper`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Final

from clockless.reaper import ReapedJobsError, parse_reaped_jobs
from clockless_tools.architecture.job_bounds import read_bounds
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function

REAPER_COVERS_FAN_OUT: Final = "reaper-covers-fan-out"
REAPER_MODULE: Final = "clockless.reaper"
REAPED_JOBS: Final = "REAPED_JOBS"


def runs_the_reaper(project: Project, fn: Function) -> bool:
    """Whether the function's handler module imports the kit's reaper."""
    location = project.handler_location(fn)
    if location.path is None:
        return False
    tree = project.source(location.path).tree
    return any(isinstance(node, ast.ImportFrom) and node.module == REAPER_MODULE for node in ast.walk(tree))


def _fanned_out_graces(project: Project) -> dict[str, int | None]:
    """Each fanned-out job's name and its grace in minutes (None: not readable, dead-man-alarm says why)."""
    template = project.template
    graces: dict[str, int | None] = {}
    for name in template.jobs:
        function = template.function_for_job(name)
        if not list(template.workers_of(function.logical_id)):
            continue
        try:
            graces[name] = int(read_bounds(function).grace.total_seconds()) // 60
        except TemplateError:
            graces[name] = None
    return graces


def check_reaper_covers_fan_out(project: Project) -> Iterator[Violation]:
    template = project.template
    graces = _fanned_out_graces(project)
    reapers = [fn for fn in template.scheduled_functions.values() if runs_the_reaper(project, fn)]
    if graces and not reapers:
        yield Violation(
            REAPER_COVERS_FAN_OUT,
            project.template_file,
            "Resources",
            f"fanned-out jobs ({', '.join(sorted(graces))}) and no tick reaper: a tick whose partition message "
            "dies stays started for ever",
            "declare the tick-reaper job (functions/tick_reaper, Mappings.Jobs.TickReaper) with REAPED_JOBS in Globals",
        )
    for fn in reapers:
        value = fn.environment.get(REAPED_JOBS)
        try:
            listed = {job.name: int(job.bound.total_seconds()) // 60 for job in parse_reaped_jobs(str(value or ""))}
        except ReapedJobsError as error:
            yield Violation(
                REAPER_COVERS_FAN_OUT,
                project.template_file,
                fn.logical_id,
                f"{error}",
                f"{REAPED_JOBS}: " + ",".join(f"{name}={grace}" for name, grace in graces.items()),
            )
            continue
        for name, grace in graces.items():
            if name not in listed:
                yield Violation(
                    REAPER_COVERS_FAN_OUT,
                    project.template_file,
                    fn.logical_id,
                    f"{REAPED_JOBS} leaves out the fanned-out job {name}: a tick of it whose partition message "
                    "dies stays started for ever",
                    f"add ,{name}={grace} to {REAPED_JOBS} (its grace_minutes)",
                )
            elif grace is not None and listed[name] != grace:
                effect = (
                    "would settle a tick that may still succeed"
                    if listed[name] < grace
                    else "would leave a stuck tick started past the grace"
                )
                yield Violation(
                    REAPER_COVERS_FAN_OUT,
                    project.template_file,
                    fn.logical_id,
                    f"{REAPED_JOBS} gives {name} a bound of {listed[name]} min, but its grace_minutes is {grace}: "
                    f"the reaper {effect}",
                    f"{name}={grace} in {REAPED_JOBS}",
                )
        for name in sorted(set(listed) - set(graces)):
            yield Violation(
                REAPER_COVERS_FAN_OUT,
                project.template_file,
                fn.logical_id,
                f"{REAPED_JOBS} names {name}, which is not a fanned-out job of the template",
                f"drop {name} from {REAPED_JOBS}",
            )


REAPER_COVERS_FAN_OUT_RULE = Rule(
    REAPER_COVERS_FAN_OUT,
    "the tick reaper's REAPED_JOBS names every fanned-out job, each with its grace_minutes as its bound",
    check_reaper_covers_fan_out,
)
