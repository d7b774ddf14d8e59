"""`clockless status` draws every tick of the window per job; `--html` writes the same grid as a
self-contained page, checked in a real headless Chromium (Debian's chromium-headless-shell)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clockless_tools.local.services import create_schedules
from clockless_tools.operations.grid import Grid, job_grid, render_html, render_text
from clockless_tools.operations.pause import set_paused
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.template.loader import PROJECT_ROOT
from clockless_tools.template.model import Template

JOB = "session-cleanup"
DAY = datetime(2026, 11, 29, tzinfo=UTC)
NOW = DAY + timedelta(hours=12, minutes=30)
ARTIFACTS = PROJECT_ROOT / ".clockless" / "test-artifacts"
BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def _record(tables: Any, hour: int, status: str) -> None:
    tables.put_item(
        TableName="LedgerTable",
        Item={
            "job": {"S": JOB},
            "scheduled_time": {"S": f"2026-11-29T{hour:02d}:00:00Z"},
            "status": {"S": status},
            "attempts": {"N": "1"},
        },
    )


@pytest.fixture
def grid(tables: Any, template: Template, dynamodb_endpoint: str) -> Grid:
    create_schedules(template, dynamodb_endpoint)
    target = LocalTarget(template, dynamodb_endpoint)
    for hour in (0, 1, 2, 3, 9, 10):
        _record(tables, hour, "succeeded")
    _record(tables, 4, "failed")
    _record(tables, 5, "skipped")
    _record(tables, 12, "started")
    set_paused(target, template, JOB, paused=True, reason="maintenance", now=DAY + timedelta(hours=5, minutes=30))
    set_paused(target, template, JOB, paused=False, reason="done", now=DAY + timedelta(hours=8, minutes=30))
    return job_grid(template, target, JOB, now=NOW, window=timedelta(hours=12, minutes=30))


EXPECTED_DAY = (
    ["succeeded"] * 4 + ["failed", "skipped"] + ["paused"] * 3 + ["succeeded"] * 2 + ["missed", "running"]
) + ["not yet due"] * 11


def test_each_hour_of_the_day_has_its_tick_state(grid: Grid) -> None:
    assert grid.rows == ["2026-11-29"]
    assert grid.columns == [f"{h:02d}" for h in range(24)]
    assert [state.value for state in grid.cells[0]] == EXPECTED_DAY


def test_the_plain_text_grid_has_a_letter_per_tick_and_a_legend(grid: Grid) -> None:
    text = render_text(grid, colour=False)

    row = text.splitlines()[2]
    assert row.split() == ["2026-11-29", *"SSSSFKPPPSSMR", *"." * 11]
    assert text.splitlines()[-1] == (
        "legend: F failed, M missed, R running, P paused, K skipped, S succeeded, . not yet due"
    )


@pytest.mark.skipif(
    BROWSER is None and os.environ.get("CLOCKLESS_REQUIRE_BROWSER") != "1",
    reason="needs Debian's chromium-headless-shell (.ci/run installs it)",
)
def test_the_html_page_renders_the_grid_in_a_real_browser(grid: Grid, tmp_path: Path) -> None:
    assert BROWSER is not None, "CLOCKLESS_REQUIRE_BROWSER=1 but no chromium-headless-shell on PATH"
    page = render_html([grid], title="clockless status")
    assert not re.search(r"(src|href)=|https?://|<script", page)  # self-contained: nothing to fetch, no script
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "status-grid.html").write_text(page, encoding="utf-8")
    # A probe added to a copy reads what the browser laid out: each cell's size and computed colour.
    probe = (
        "<script>document.body.setAttribute('data-rendered', JSON.stringify("
        "[...document.querySelectorAll('td.cell')].map(c => {const r = c.getBoundingClientRect();"
        "return [c.dataset.state, Math.round(r.width), Math.round(r.height), getComputedStyle(c).backgroundColor]})"
        "));</script>"
    )
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    flags = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=900,400"]

    dumped = subprocess.run(
        [*flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=60, check=True
    )
    subprocess.run(
        [*flags, f"--screenshot={ARTIFACTS / 'status-grid.png'}", (ARTIFACTS / "status-grid.html").as_uri()],
        capture_output=True,
        timeout=60,
        check=True,
    )

    rendered_attribute = re.search(r'data-rendered="([^"]*)"', dumped.stdout)
    assert rendered_attribute is not None, dumped.stdout[:500]
    rendered = json.loads(rendered_attribute.group(1).replace("&quot;", '"'))
    assert [state for state, *_ in rendered] == EXPECTED_DAY
    assert all(width >= 14 and height >= 14 for _, width, height, _ in rendered)
    colours = {state: colour for state, _, _, colour in rendered}
    assert colours["succeeded"] == "rgb(46, 125, 50)"
    assert colours["failed"] == "rgb(198, 40, 40)"
    assert len(set(colours.values())) == len(colours)  # every state its own colour
    assert (ARTIFACTS / "status-grid.png").stat().st_size > 1000


def test_cli_status_writes_the_html_page(
    tables: Any, template: Template, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from clockless_tools.cli.app import app

    page = tmp_path / "status.html"
    result = CliRunner().invoke(app, ["status", "--endpoint", dynamodb_endpoint, "--html", str(page)])

    assert result.stderr == f"tick grids written to {page}\n"
    assert page.read_text(encoding="utf-8").count('<table class="grid"') == len(template.jobs)
    assert "legend: F failed" in result.stdout
