"""The architecture rules hold on the project and on an untouched copy, report together with a fix
each, and checking a copy leaves the imported project alone. Each rule's plants are in
test_<rule_id>.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clockless_tools.architecture import RULES, Project, check
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy

TEMPLATE = "template.yaml"


CLEANUP = "  SessionCleanupFunction:\n"


CLEANUP_HANDLER = "functions/session_cleanup/session_cleanup/handler.py"


CLEANUP_LOGIC = "functions/session_cleanup/session_cleanup/logic.py"


@pytest.mark.parametrize("rule", [r.name for r in RULES])
def test_the_project_keeps_every_rule(rule: str) -> None:
    # Given the project as it is
    project = Project.at(PROJECT_ROOT)

    # When one rule checks it
    violations = check(project, [r for r in RULES if r.name == rule])

    # Then it finds nothing
    assert violations == []


def test_an_untouched_copy_keeps_every_rule(tmp_path: Path) -> None:
    # The plants below are only meaningful if the copy itself is clean.
    assert check(PlantedCopy.of_project(tmp_path).project) == []


def test_violations_of_different_rules_are_reported_together_each_with_a_fix(tmp_path: Path) -> None:
    # Given a copy with three unrelated violations
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(TEMPLATE, "ScheduleExpressionTimezone: UTC", "ScheduleExpressionTimezone: Europe/Paris", after=CLEANUP)
    copy.replace(CLEANUP_HANDLER, "@job.handler\n", "")
    copy.append(CLEANUP_LOGIC, "\nimport sched\n")

    # When every rule checks it
    violations = check(copy.project)

    # Then all three are reported at once, each with a one-line fix (a zone other than UTC also
    # breaks the time-zone linter's rule)
    assert {v.rule for v in violations} == {"schedule-delivery", "scheduled-by-kit", "no-clock-in-app", "local-time"}
    assert all(v.fix and "\n" not in v.fix and "\n" not in v.message for v in violations)


# ---------------------------------------------------------------------------------------------- isolation
def test_checking_a_copy_leaves_the_imported_project_modules_alone(tmp_path: Path) -> None:
    # The layering rule reads a copy's packages under the project's own package names.
    import clockless
    import session_cleanup.logic

    copy = PlantedCopy.of_project(tmp_path)
    copy.append(CLEANUP_LOGIC, "\nimport boto3\n")
    path_before = list(sys.path)

    copy.violations("layering")

    assert sys.modules["clockless"] is clockless
    assert sys.modules["session_cleanup.logic"] is session_cleanup.logic
    assert sys.path == path_before
