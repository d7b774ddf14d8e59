"""run-now and backfill refuse an unwritable --log before they run a tick: one line naming the
option and the path, exit 2, the ledger untouched, no folder created outside the project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from tests.integration.conftest import scan_all
from tests.jobs import jobs, project_template

JOB = jobs()[0]
TICK = str(JOB.sample()["scheduled_time"])
LEDGER = project_template().tables_of_kind("ledger")[0]


@pytest.mark.parametrize("command", ["run-now", "backfill"])
def test_an_unwritable_log_is_refused_before_any_tick_runs(
    tables: Any, dynamodb_endpoint: str, tmp_path: Path, command: str
) -> None:
    missing = tmp_path / "missing" / "dir" / "x.log"
    when = ["--at", TICK] if command == "run-now" else ["--from", TICK, "--to", TICK.replace(":00Z", ":01Z")]

    result = CliRunner().invoke(app, [command, JOB.name, *when, "--endpoint", dynamodb_endpoint, "--log", str(missing)])

    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert (
        line
        == f"error: --log {missing}: no folder {missing.parent} (outside the project only the file itself is created)"
    )
    assert not (tmp_path / "missing").exists()
    assert scan_all(tables, LEDGER) == []  # no tick was claimed or recorded
