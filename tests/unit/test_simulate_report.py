"""simulate/report.py: how the template tells bookkeeping tables from the jobs' own."""

from __future__ import annotations

from clockless_tools.simulate.report import bookkeeping_tables, job_tables
from clockless_tools.template.model import Template


def test_bookkeeping_tables_are_told_by_their_metadata(template: Template) -> None:
    assert bookkeeping_tables(template) == {"IdempotencyTable", "LedgerTable"}
    assert job_tables(template, "WindowGenerationFunction") == ["ProgramsTable", "WindowsTable"]
    assert job_tables(template, "SessionCleanupFunction") == ["SessionsTable"]
