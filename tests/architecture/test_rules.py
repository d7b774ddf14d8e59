"""The architecture rules hold on the project and on an untouched copy, report together with a fix
each, and checking a copy leaves the imported project alone. Each rule's plants are in
test_<rule_id>.py."""

from __future__ import annotations

import importlib
import sys

import pytest

from clockless_tools.architecture import RULES, Project, check
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"


CLEANUP_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


CLEANUP_LOGIC = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/logic.py"


@pytest.mark.parametrize("rule", [r.name for r in RULES])
def test_the_project_keeps_every_rule(rule: str) -> None:
    # Given the project as it is
    project = Project.at(PROJECT_ROOT)

    # When one rule checks it
    violations = check(project, [r for r in RULES if r.name == rule])

    # Then it finds nothing
    assert violations == []


def test_an_untouched_copy_keeps_every_rule(planted: PlantedCopy) -> None:
    # The plants are only meaningful if the copy itself is clean.
    assert check(planted.project) == []


def test_violations_of_different_rules_are_reported_together_each_with_a_fix(planted: PlantedCopy) -> None:
    # Given a copy with three unrelated violations
    planted.replace(
        TEMPLATE, "ScheduleExpressionTimezone: UTC", "ScheduleExpressionTimezone: Europe/Paris", after=CLEANUP
    )
    planted.replace(CLEANUP_HANDLER, "@job.handler\n", "")
    planted.append(CLEANUP_LOGIC, "\nimport sched\n")

    # When every rule checks it
    violations = check(planted.project)

    # Then all three are reported at once, each with a one-line fix (a zone other than UTC also
    # breaks the time-zone linter's rule, and the trigger's copy of the schedule no longer matches)
    assert {v.rule for v in violations} == {
        "schedule-delivery",
        "scheduled-by-kit",
        "no-clock-in-app",
        "local-time",
        "trigger-schedules",
    }
    assert all(v.fix and "\n" not in v.fix and "\n" not in v.message for v in violations)


# ---------------------------------------------------------------------------------------------- isolation
def test_checking_a_copy_leaves_the_imported_project_modules_alone(planted: PlantedCopy) -> None:
    # The layering rule reads a copy's packages under the project's own package names.
    import clockless

    logic = importlib.import_module(f"{HOURLY_JOB.package}.logic")

    planted.append(CLEANUP_LOGIC, "\nimport boto3\n")
    path_before = list(sys.path)

    planted.violations("layering")

    assert sys.modules["clockless"] is clockless
    assert sys.modules[f"{HOURLY_JOB.package}.logic"] is logic
    assert sys.path == path_before
