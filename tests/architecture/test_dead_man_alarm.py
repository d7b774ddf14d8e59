"""Rule `dead-man-alarm`: every scheduled job has a dead-man alarm whose period matches its schedule."""

from __future__ import annotations

from pathlib import Path

import pytest

from clockless_tools.architecture import RULES, Project, check
from clockless_tools.architecture.dead_man_alarm import dead_man_alarm_problems, expected_alarm_shape
from clockless_tools.template.model import Template

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _planted(tmp_path: Path, old: str, new: str, *, after: str = "") -> Template:
    """A copy of template.yaml with the first `old` after the `after` marker replaced by `new`."""
    text = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
    start = text.index(after) if after else 0
    assert old in text[start:], f"the plant needs {old!r} after {after!r} in template.yaml"
    broken = tmp_path / "template.yaml"
    broken.write_text(text[:start] + text[start:].replace(old, new, 1), encoding="utf-8")
    return Template.load(broken)


def test_every_job_in_the_template_has_a_dead_man_alarm_of_its_own_period(template: Template) -> None:
    assert dead_man_alarm_problems(template) == []


@pytest.mark.parametrize(
    ("expression", "shape"),
    [
        ("cron(0 * * * ? *)", (3600, 1)),
        ("cron(0 14 * * ? *)", (86400, 1)),
        ("cron(0 14 ? * MON *)", (86400, 7)),
        ("rate(15 minutes)", (900, 1)),
    ],
)
def test_alarm_shape_covers_exactly_one_schedule_period(expression: str, shape: tuple[int, int]) -> None:
    assert expected_alarm_shape(expression) == shape


def test_planted_hourly_period_on_the_nightly_job_is_caught(tmp_path: Path) -> None:
    broken = _planted(
        tmp_path,
        "      Statistic: Sum\n      Period: 86400\n",
        "      Statistic: Sum\n      Period: 3600\n",
    )

    problems = dead_man_alarm_problems(broken)

    assert [(p.job, p.resource) for p in problems] == [("window-generation", "WindowGenerationDeadManAlarm")]
    assert "Period is 3600" in problems[0].message


def test_planted_missing_data_not_breaching_is_caught(tmp_path: Path) -> None:
    broken = _planted(
        tmp_path, "TreatMissingData: breaching", "TreatMissingData: notBreaching", after="  SessionCleanupDeadManAlarm:"
    )

    problems = dead_man_alarm_problems(broken)

    assert [(p.job, p.resource) for p in problems] == [("session-cleanup", "SessionCleanupDeadManAlarm")]
    assert "TreatMissingData" in problems[0].message


def test_planted_job_without_an_alarm_is_caught(tmp_path: Path) -> None:
    broken = _planted(
        tmp_path,
        "          Value: session-cleanup\n        - Name: service",
        "          Value: some-other-job\n        - Name: service",
    )

    problems = dead_man_alarm_problems(broken)

    assert [(p.job, p.resource) for p in problems] == [("session-cleanup", "SessionCleanupFunction")]
    assert "no alarm" in problems[0].message


def test_the_rule_engine_reports_it_by_name_file_and_resource(tmp_path: Path) -> None:
    broken = _planted(
        tmp_path, "      Statistic: Sum\n      Period: 86400\n", "      Statistic: Sum\n      Period: 3600\n"
    )

    violations = [v for v in check(Project.for_template(broken.path), RULES) if v.rule == "dead-man-alarm"]

    assert [(v.file, v.resource) for v in violations] == [("template.yaml", "WindowGenerationDeadManAlarm")]
