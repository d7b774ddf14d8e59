"""The dead-man alarm timing table computed from template.yaml (docs/alarms.md carries it as a
generated block: tests/unit/test_docs.py checks it is current)."""

from __future__ import annotations

from clockless_tools.architecture.alarm_table import render_table
from clockless_tools.template.model import Template


def test_the_table_has_a_row_per_recurring_job(template: Template) -> None:
    rows = render_table(template).splitlines()[2:]

    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == sorted(template.jobs)
