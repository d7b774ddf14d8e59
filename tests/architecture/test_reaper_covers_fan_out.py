"""Rule `reaper-covers-fan-out`: a fanned-out job left out of the tick reaper's REAPED_JOBS, a
bound other than its grace, a job that is not fanned out, an unreadable line and a template
without the reaper, each planted and caught."""

from __future__ import annotations

import re

import pytest

from clockless_tools.architecture.project import Project
from clockless_tools.architecture.reaper_covers_fan_out import REAPER_COVERS_FAN_OUT, runs_the_reaper
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy, found
from tests.jobs import jobs

TEMPLATE = "template.yaml"
FANNED_OUT = [job for job in jobs() if job.worker_id is not None]
FIRST = FANNED_OUT[0]
PROJECT = Project.at(PROJECT_ROOT)
REAPER = next(job.function_id for job in jobs() if runs_the_reaper(PROJECT, PROJECT.template.function(job.function_id)))
LINE = re.search(r"^        REAPED_JOBS: (.*)$", (PROJECT_ROOT / TEMPLATE).read_text(encoding="utf-8"), re.M)
assert LINE is not None
LISTED = LINE.group(1)
GRACE = dict(part.split("=") for part in LISTED.split(","))[FIRST.name]


def _plant(planted: PlantedCopy, line: str) -> None:
    planted.replace(TEMPLATE, f"        REAPED_JOBS: {LISTED}\n", f"        REAPED_JOBS: {line}\n")


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations(REAPER_COVERS_FAN_OUT) == []
    assert {part.split("=")[0] for part in LISTED.split(",")} == {job.name for job in FANNED_OUT}


def test_a_fanned_out_job_left_out_is_caught(planted: PlantedCopy) -> None:
    _plant(planted, ",".join(part for part in LISTED.split(",") if not part.startswith(f"{FIRST.name}=")))

    violation = found(
        planted.violations(REAPER_COVERS_FAN_OUT),
        file=TEMPLATE,
        resource=REAPER,
        containing=f"leaves out the fanned-out job {FIRST.name}",
    )
    assert violation.fix == f"add ,{FIRST.name}={GRACE} to REAPED_JOBS (its grace_minutes)"


@pytest.mark.parametrize(
    ("delta", "effect"),
    [(-1, "would settle a tick that may still succeed"), (1, "would leave a stuck tick started past the grace")],
)
def test_a_bound_other_than_the_jobs_grace_is_caught(planted: PlantedCopy, delta: int, effect: str) -> None:
    _plant(planted, LISTED.replace(f"{FIRST.name}={GRACE}", f"{FIRST.name}={int(GRACE) + delta}"))

    violation = found(planted.violations(REAPER_COVERS_FAN_OUT), file=TEMPLATE, resource=REAPER, containing=effect)
    assert f"its grace_minutes is {GRACE}" in violation.message


def test_a_job_that_is_not_fanned_out_is_caught(planted: PlantedCopy) -> None:
    _plant(planted, f"{LISTED},no-such-job=5")

    found(planted.violations(REAPER_COVERS_FAN_OUT), file=TEMPLATE, resource=REAPER, containing="names no-such-job")


def test_an_unreadable_line_is_caught_with_the_line_to_write(planted: PlantedCopy) -> None:
    _plant(planted, FIRST.name)

    violation = found(
        planted.violations(REAPER_COVERS_FAN_OUT), file=TEMPLATE, resource=REAPER, containing="is not <job>=<minutes>"
    )
    assert f"{FIRST.name}={GRACE}" in violation.fix


def test_fanned_out_jobs_without_a_reaper_are_caught(planted: PlantedCopy) -> None:
    location = PROJECT.handler_location(PROJECT.template.function(REAPER))
    assert location.path is not None
    handler = PROJECT.relative(location.path)
    planted.replace(handler, "from clockless.reaper import", "from clockless.ledger import")

    violation = found(
        planted.violations(REAPER_COVERS_FAN_OUT), file=TEMPLATE, resource="Resources", containing="no tick reaper"
    )
    assert FIRST.name in violation.message
