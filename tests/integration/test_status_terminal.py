"""What `clockless status` prints reads true whatever the terminal: a letter for every state with or
without colour (NO_COLOR, TERM=dumb, a pipe), the table's headers whole at 80 columns, when it was
generated, and a --html path it cannot write as one line with its own exit code."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from rich.console import Console
from typer.testing import CliRunner

from clockless_tools.cli import status as status_command
from clockless_tools.cli.app import app
from clockless_tools.cli.common import EXIT_FOUND, EXIT_NOT_WRITTEN
from clockless_tools.local.services import create_schedules
from clockless_tools.operations.grid import SEVERITY, STYLE, TickState, job_grid, render_text
from clockless_tools.operations.pause import set_paused
from clockless_tools.operations.status import COLUMNS, job_status
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.template.model import Template
from tests.integration.test_status_grid import JOB, record_tick

DAY = datetime(2026, 11, 29, tzinfo=UTC)
NOW = DAY + timedelta(hours=6, minutes=30)


@pytest.fixture
def bad_night(tables: Any, template: Template, dynamodb_endpoint: str) -> LocalTarget:
    """00-02 succeeded, 03 failed, 04 buffered, 05 missed, 06 running."""
    create_schedules(template, dynamodb_endpoint)
    for hour in (0, 1, 2):
        record_tick(tables, hour, "succeeded")
    record_tick(tables, 3, "failed", error={"S": "ValueError: bad row"})
    record_tick(tables, 4, "buffered")
    record_tick(tables, 6, "started")
    return LocalTarget(template, dynamodb_endpoint)


@pytest.mark.parametrize(
    "console",
    [
        pytest.param({"no_color": True}, id="NO_COLOR"),
        pytest.param({"color_system": None}, id="TERM=dumb"),
        pytest.param({"color_system": "truecolor"}, id="colour"),
    ],
)
def test_every_state_reads_by_its_letter_with_or_without_colour(
    bad_night: LocalTarget, template: Template, console: dict[str, Any]
) -> None:
    grid = job_grid(template, bad_night, JOB, now=NOW, window=timedelta(hours=7))
    out = io.StringIO()

    Console(file=out, force_terminal=True, width=200, **console).print(render_text(grid, colour=True))

    raw = out.getvalue()
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    row = next(line for line in text.splitlines() if line.startswith("2026-11-29"))
    letters = "".join(ch for ch in row.removeprefix("2026-11-29") if ch.isalpha() or ch == ".")
    assert letters.startswith("SSSFBMR")
    for state in SEVERITY[:-1]:
        assert f"{STYLE[state][0]} {state.value}" in text
    coloured = "48;2" in raw  # a background colour behind the letters
    assert coloured == (console.get("color_system") == "truecolor")


def test_no_color_status_in_a_pipe_shows_the_letters(bad_night: LocalTarget, dynamodb_endpoint: str) -> None:
    # On the bad night's morning: its ticks inside the default window whatever today's date is
    with time_machine.travel(NOW, tick=False):
        result = CliRunner().invoke(app, ["status", "--endpoint", dynamodb_endpoint], env={"NO_COLOR": "1"})

    assert result.exit_code == EXIT_FOUND
    grid_rows = [line for line in result.stdout.splitlines() if line.startswith("20") and " F " in line]
    assert grid_rows, result.stdout
    assert "■" not in result.stdout
    assert "generated at " in result.stdout


def test_json_says_when_it_was_generated_and_a_paused_job_has_no_next_ticks(
    bad_night: LocalTarget, template: Template, dynamodb_endpoint: str
) -> None:
    set_paused(bad_night, template, JOB, paused=True, reason="INC-7", now=datetime.now(UTC) - timedelta(minutes=1))
    before = datetime.now(UTC).replace(microsecond=0)
    try:
        result = CliRunner().invoke(app, ["status", "--endpoint", dynamodb_endpoint, "--json"])
    finally:
        # The embedded scheduler outlives the test's tables: the schedule must not stay DISABLED.
        set_paused(bad_night, template, JOB, paused=False, reason="INC-7 done", now=datetime.now(UTC))

    document = json.loads(result.stdout)
    generated = datetime.fromisoformat(document["generated_at"])
    assert before - timedelta(seconds=1) <= generated <= datetime.now(UTC)
    assert document["window"][1] == document["generated_at"]
    [paused] = [job for job in document["jobs"] if job["job"] == JOB]
    assert paused["paused_since"] is not None
    assert paused["next_ticks"] == []


def test_at_80_columns_every_header_and_time_is_whole(
    bad_night: LocalTarget, template: Template, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    monkeypatch.setattr(status_command, "stdout", Console(file=out, width=80, force_terminal=False))
    statuses = [job_status(template, bad_night, job, now=NOW, window=timedelta(hours=7)) for job in template.jobs]

    status_command.print_status_table(statuses, title="clockless status: local, last 7 h")

    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    # nothing cut short by the table (only the missing list's own line says how many it leaves out)
    assert [line for line in lines if "…" in line and "older not shown" not in line] == []
    for column in COLUMNS[1:]:
        assert sum(1 for line in lines if line.strip().startswith(column)) == len(statuses), column
    assert any("2026-11-29T03:00:00Z failed" in line for line in lines)


def test_at_80_columns_the_hourly_grid_keeps_one_line_per_day(bad_night: LocalTarget, template: Template) -> None:
    grid = job_grid(template, bad_night, JOB, now=NOW, window=timedelta(hours=7))
    out = io.StringIO()

    Console(file=out, width=80, force_terminal=True, color_system="truecolor").print(
        render_text(grid, colour=True, max_width=80)
    )

    lines = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines()
    row = next(line for line in lines if line.startswith("11-29 "))
    assert len(row) <= 80
    assert row.split()[1:8] == list("SSSFBMR")
    assert render_text(grid, colour=False).splitlines()[2].startswith("2026-11-29 ")  # wide enough: the year


def test_a_wide_terminal_keeps_the_table(
    bad_night: LocalTarget, template: Template, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    monkeypatch.setattr(status_command, "stdout", Console(file=out, width=1000))
    statuses = [job_status(template, bad_night, job, now=NOW, window=timedelta(days=1)) for job in template.jobs]

    status_command.print_status_table(statuses, title="t")

    header = next(line for line in out.getvalue().splitlines() if "last success" in line)
    assert all(column in header for column in COLUMNS)


def test_an_html_path_it_cannot_write_is_one_line_and_its_own_exit_code(
    bad_night: LocalTarget, dynamodb_endpoint: str, tmp_path: Any
) -> None:
    page = tmp_path / "no-such-dir" / "status.html"

    result = CliRunner().invoke(app, ["status", "--endpoint", dynamodb_endpoint, "--html", str(page)])

    assert result.exit_code == EXIT_NOT_WRITTEN
    assert result.stderr == f"error: cannot write the status page to {page}: No such file or directory\n"
    assert "last success" in result.stdout  # the table, printed all the same
    assert "legend: F failed" in result.stdout
    assert not page.exists()


def test_each_state_of_the_legend_has_its_own_letter_in_the_plain_grid() -> None:
    assert len({STYLE[state][0] for state in TickState}) == len(TickState)
