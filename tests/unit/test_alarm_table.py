"""docs/alarms.md carries the dead-man alarm timing table computed from template.yaml."""

from __future__ import annotations

from clockless_tools.architecture.alarm_table import DOC, render_table, with_table
from clockless_tools.template.model import Template


def test_the_documented_timing_table_is_the_computed_one(template: Template) -> None:
    text = DOC.read_text(encoding="utf-8")

    assert with_table(text, template) == text, (
        "regenerate it: .venv/bin/python -m clockless_tools.architecture.alarm_table"
    )


def test_the_table_has_a_row_per_recurring_job(template: Template) -> None:
    rows = render_table(template).splitlines()[2:]

    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == sorted(template.jobs)
