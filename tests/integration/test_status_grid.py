"""`clockless status` draws every tick of the window per job; `--html` writes the same grid as a
self-contained page, checked in a real headless Chromium (Debian's chromium-headless-shell)."""

from __future__ import annotations

import html
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
from clockless_tools.operations.grid import STYLE, Grid, TickState, job_grid, render_text
from clockless_tools.operations.page import StatusPage, render_page
from clockless_tools.operations.pause import set_paused
from clockless_tools.operations.status import JobStatus, job_status
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.template.loader import PROJECT_ROOT
from clockless_tools.template.model import Template
from tests.jobs import HOUR, job_where

# A job with hourly ticks: the grid draws twelve of them.
JOB = job_where(period=HOUR).name
DAY = datetime(2026, 11, 29, tzinfo=UTC)
NOW = DAY + timedelta(hours=12, minutes=30)
ARTIFACTS = PROJECT_ROOT / ".clockless" / "test-artifacts"
BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def record_tick(tables: Any, hour: int, status: str, **extra: Any) -> None:
    """The hourly job's 2026-11-29 tick at `hour` in the ledger with `status` (and `extra` attributes)."""
    tables.put_item(
        TableName="LedgerTable",
        Item={
            "job": {"S": JOB},
            "scheduled_time": {"S": f"2026-11-29T{hour:02d}:00:00Z"},
            "status": {"S": status},
            "attempts": {"N": "1"},
            # as the kit writes a success: the sparse index `last success` reads
            **({"succeeded_job": {"S": JOB}} if status == "succeeded" else {}),
            **extra,
        },
    )


@pytest.fixture
def grid(tables: Any, template: Template, dynamodb_endpoint: str) -> Grid:
    create_schedules(template, dynamodb_endpoint)
    target = LocalTarget(template, dynamodb_endpoint)
    for hour in (0, 1, 2, 3, 10):
        record_tick(tables, hour, "succeeded")
    record_tick(tables, 4, "failed")
    record_tick(tables, 5, "skipped")
    record_tick(tables, 9, "buffered")  # held back by the overlap policy until the tick before it settles
    record_tick(tables, 12, "started")
    set_paused(target, template, JOB, paused=True, reason="maintenance", now=DAY + timedelta(hours=5, minutes=30))
    set_paused(target, template, JOB, paused=False, reason="done", now=DAY + timedelta(hours=8, minutes=30))
    return job_grid(template, target, JOB, now=NOW, window=timedelta(hours=12, minutes=30))


EXPECTED_DAY = (
    ["succeeded"] * 4 + ["failed", "skipped"] + ["paused"] * 3 + ["buffered", "succeeded", "missed", "running"]
) + ["not yet due"] * 11


def test_each_hour_of_the_day_has_its_tick_state(grid: Grid) -> None:
    assert grid.rows == ["2026-11-29"]
    assert grid.columns == [f"{h:02d}" for h in range(24)]
    assert [state.value for state in grid.cells[0]] == EXPECTED_DAY


def test_the_plain_text_grid_has_a_letter_per_tick_and_a_legend(grid: Grid) -> None:
    text = render_text(grid, colour=False)

    row = text.splitlines()[2]
    assert row.split() == ["2026-11-29", *"SSSSFKPPPBSMR", *"." * 11]
    assert text.splitlines()[-1] == (
        "legend: F failed, X failing, M missed, R running, B buffered, P paused, K skipped, S succeeded, . not yet due"
    )


def _weekly_job(template: Template, target: LocalTarget) -> str:
    """A job of the template drawn weeks x days (it ticks less than hourly)."""
    for job in sorted(template.jobs):
        if len(target.schedule_spec(job).ticks_between(NOW - timedelta(days=2), NOW)) < 24:
            return job
    pytest.skip("the template has no job slower than hourly")


def _fan_out_failing(tables: Any) -> None:
    """The 12:00 tick fanned out: one partition done, one retrying on its 3rd receive."""
    work = {"S": f"{JOB}#work"}
    tables.update_item(
        TableName="LedgerTable",
        Key={"job": {"S": JOB}, "scheduled_time": {"S": "2026-11-29T12:00:00Z"}},
        UpdateExpression="SET partitions_total = :two, partitions_done = :one",
        ExpressionAttributeValues={":two": {"N": "2"}, ":one": {"N": "1"}},
    )
    for partition, extra in (
        ("0", {"status": {"S": "done"}}),
        ("1", {"status": {"S": "running"}, "receives": {"N": "3"}, "last_error": {"S": "ThrottlingException"}}),
    ):
        tables.put_item(
            TableName="LedgerTable",
            Item={"job": work, "scheduled_time": {"S": f"2026-11-29T12:00:00Z#p{partition}"}, **extra},
        )


def _render_in_chromium(page: str, tmp_path: Path, name: str, *, width: int = 1280) -> dict[str, Any]:
    """What a real browser laid out in a frame `width` CSS px wide (the page's own viewport, whatever
    window the Chromium build gives: some clamp it to 500 px at least): each cell's state, letter,
    box and colours, the texts, and what stands where."""
    assert BROWSER is not None, "CLOCKLESS_REQUIRE_BROWSER=1 but no chromium-headless-shell on PATH"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    probe = (
        "<script>parent.document.body.setAttribute('data-rendered', JSON.stringify({"
        "cells: [...document.querySelectorAll('div.grid .cell')].map(c => {const r = c.getBoundingClientRect();"
        "return {job: c.closest('div.grid').dataset.job, state: c.dataset.state, letter: c.innerText,"
        "width: r.width, height: r.height, left: r.left, right: r.right, top: r.top, bottom: r.bottom,"
        "background: getComputedStyle(c).backgroundColor,"
        "ink: getComputedStyle(c).color, title: c.title}}),"
        "emptyRows: [...document.querySelectorAll('div.grid')].flatMap(g => {"
        "const n = +g.style.getPropertyValue('--cols'), cells = [...g.querySelectorAll('.cell')], rows = [];"
        "for (let i = 0; i < cells.length; i += n) rows.push(cells.slice(i, i + n)); return rows;})"
        ".filter(r => r.every(c => c.dataset.state === 'no tick')).length,"
        "headings: [...document.querySelectorAll('section h2')].map(h => h.innerText),"
        "status: Object.fromEntries([...document.querySelectorAll('table.status tr[data-job]')].map(r =>"
        " [r.dataset.job, Object.fromEntries([...r.cells].map(c => [c.dataset.column, c.innerText]))])),"
        "statusTop: document.querySelector('table.status').getBoundingClientRect().top,"
        "title: {width: document.querySelector('h1').getBoundingClientRect().width,"
        " content: document.querySelector('h1').scrollWidth},"
        "text: document.body.innerText, viewport: window.innerWidth,"
        "pageWidth: document.documentElement.scrollWidth, pageHeight: document.documentElement.scrollHeight,"
        "boxes: [...document.querySelectorAll('table, div.grid')].map(t => {const box = t.parentElement;"
        "return {grid: t.matches('div.grid'), scrolls: getComputedStyle(box).overflowX, width: box.clientWidth,"
        " content: box.scrollWidth}})"
        "}));</script>"
    )

    def framed(document: str) -> str:
        return (
            # Without a declared charset Chromium may guess windows-1252 for this file:// page and
            # read the UTF-8 `…` inside srcdoc as `â€¦` (the flake seen under load).
            '<!doctype html><html><head><meta charset=utf-8></head><body style="margin:0">'
            f'<iframe style="border:0;width:{width}px;height:1400px" srcdoc="{html.escape(document)}"></iframe>'
            "</body></html>"
        )

    (ARTIFACTS / f"{name}.html").write_text(page, encoding="utf-8")
    (ARTIFACTS / f"{name}-framed.html").write_text(framed(page), encoding="utf-8")
    probed = tmp_path / "probed.html"
    probed.write_text(framed(page.replace("</body>", probe + "</body>")), encoding="utf-8")
    flags = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width + 100},1400"]
    dumped = subprocess.run(
        [*flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=60, check=True
    )
    subprocess.run(
        [*flags, f"--screenshot={ARTIFACTS / f'{name}.png'}", (ARTIFACTS / f"{name}-framed.html").as_uri()],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert (ARTIFACTS / f"{name}.png").stat().st_size > 1000
    rendered_attribute = re.search(r'data-rendered="([^"]*)"', dumped.stdout)
    assert rendered_attribute is not None, dumped.stdout[:500]
    return dict(json.loads(html.unescape(rendered_attribute.group(1))))


def _rgb(colour: str) -> str:
    return "rgb({}, {}, {})".format(*(int(colour[i : i + 2], 16) for i in (1, 3, 5)))


@pytest.mark.skipif(
    BROWSER is None and os.environ.get("CLOCKLESS_REQUIRE_BROWSER") != "1",
    reason="needs Debian's chromium-headless-shell (.ci/run installs it)",
)
def _incident_page(template: Template, target: LocalTarget, tables: Any) -> tuple[str, list[JobStatus], str]:
    """The bad night's page: the hourly job's 12:00 tick failing, a weekly job paused; and that job."""
    _fan_out_failing(tables)
    weekly = _weekly_job(template, target)
    set_paused(target, template, weekly, paused=True, reason="vendor API down, INC-42", now=NOW - timedelta(hours=1))
    window = timedelta(days=9)
    statuses = [job_status(template, target, job, now=NOW, window=window) for job in (JOB, weekly)]
    grids = [job_grid(template, target, s.job, now=NOW, window=window, failing=s.failing) for s in statuses]
    page = render_page(
        StatusPage("clockless status: local", "local", NOW, NOW - window, NOW, statuses=statuses, grids=grids)
    )
    assert not re.search(r"(src|href)=|https?://|<script", page)  # self-contained: nothing to fetch, no script
    return page, statuses, weekly


needs_browser = pytest.mark.skipif(
    BROWSER is None and os.environ.get("CLOCKLESS_REQUIRE_BROWSER") != "1",
    reason="needs Debian's chromium-headless-shell (.ci/run installs it)",
)


@needs_browser
def test_the_incident_page_in_a_real_browser(
    grid: Grid, tables: Any, template: Template, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    target = LocalTarget(template, dynamodb_endpoint)
    page, statuses, weekly = _incident_page(template, target, tables)
    window = timedelta(days=9)

    shown = _render_in_chromium(page, tmp_path, "status-page", width=1280)

    text = shown["text"]
    assert "generated at 2026-11-29T12:30:00Z (UTC)" in text
    assert "window: 2026-11-20T12:30:00Z to 2026-11-29T12:30:00Z (UTC)" in text
    assert len(shown["headings"]) == 2
    assert all("(UTC; columns: " in heading for heading in shown["headings"])
    # The terminal's table: last success, last failure, missing, who paused and why, fanned-out progress.
    hourly_row, weekly_row = shown["status"][JOB], shown["status"][weekly]
    assert hourly_row["last success"] == "2026-11-29T10:00:00Z"
    # The 12:00 tick is failing (its partitions retry): the newest failure, though no entry says failed yet.
    assert hourly_row["last failure"].splitlines()[0] == "2026-11-29T12:00:00Z failing"
    missing = hourly_row["missing"].splitlines()
    assert missing[0] == str(len(statuses[0].missing))
    # More than fit: the oldest are left out, never the failed or failing ticks.
    assert missing[1] == f"… {len(statuses[0].missing) - 20} older not shown (--json lists all)"
    assert "2026-11-29T12:00:00Z failing" in missing
    assert "2026-11-29T04:00:00Z failed" in missing
    assert "paused since 2026-11-29T11:30:00Z" in weekly_row["job"]
    assert "vendor API down, INC-42" in weekly_row["job"]
    assert weekly_row["next ticks"] == "none: paused"
    assert f"{JOB} @ 2026-11-29T12:00:00Z fanned out, failing: 1/2 partitions done (1 retrying)" in text
    assert "p1 retrying (receive 3, last error: ThrottlingException)" in text
    cells = shown["cells"]
    # A letter in each cell as well as its colour (the letter's colour readable on it).
    for cell in cells:
        letter, background, ink = STYLE[TickState(cell["state"])]
        assert (cell["letter"], cell["background"], cell["ink"]) == (letter.strip(), _rgb(background), _rgb(ink))
    hourly = [c for c in cells if c["job"] == JOB]
    assert [c["state"] for c in hourly[-24:]] == [*EXPECTED_DAY[:12], "failing", *EXPECTED_DAY[13:]]
    # Equal widths, hourly and weekly alike; no row without a tick of the window.
    assert {(round(c["width"]), round(c["height"])) for c in cells} == {(22, 22)}
    assert shown["emptyRows"] == 0
    # Each tooltip at the tick's own time: the weekly job's ticks at their hour, not the day's 00:00.
    tick_hours = {t.strftime("T%H:%M:%SZ") for t in target.schedule_spec(weekly).ticks_between(NOW - window, NOW)}
    weekly_tips = [c["title"] for c in cells if c["job"] == weekly and c["state"] not in ("no tick", "paused")]
    assert weekly_tips
    assert all(any(hour in tip for hour in tick_hours) for tip in weekly_tips), weekly_tips


NIGHT = DAY + timedelta(hours=22, minutes=30)
NIGHT_ERROR = "ConnectionError: sessions index unreachable (while reading page 2 of the empty-by-start index)"


def _bad_night_page(template: Template, target: LocalTarget, tables: Any) -> str:
    """A bad night's page at 22:30: the 04:00 tick failed, the 22:00 tick fanned out to 64 partitions
    all retrying on the same error, the week before missed, a weekly job paused; a title naming a
    stack by its long ARN."""
    create_schedules(template, target.endpoint)
    for hour in range(22):
        record_tick(tables, hour, "failed" if hour == 4 else "succeeded", error={"S": NIGHT_ERROR})
    record_tick(tables, 22, "started", partitions_total={"N": "64"}, partitions_done={"N": "0"})
    for partition in range(64):
        tables.put_item(
            TableName="LedgerTable",
            Item={
                "job": {"S": f"{JOB}#work"},
                "scheduled_time": {"S": f"2026-11-29T22:00:00Z#p{partition}"},
                "status": {"S": "running"},
                "receives": {"N": "3"},
                "last_error": {"S": NIGHT_ERROR},
            },
        )
    weekly = _weekly_job(template, target)
    set_paused(target, template, weekly, paused=True, reason="vendor API down, INC-42", now=NIGHT - timedelta(hours=1))
    window = timedelta(days=9)
    statuses = [job_status(template, target, job, now=NIGHT, window=window) for job in (JOB, weekly)]
    grids = [job_grid(template, target, s.job, now=NIGHT, window=window, failing=s.failing) for s in statuses]
    title = (
        "clockless status: stack clockless-production-eu-central-1 (arn:aws:cloudformation:eu-central-1:"
        "123456789012:stack/clockless-production-eu-central-1/3f2a9c1e-0b7d-11ef-9a4b-0a1b2c3d4e5f)"
    )
    return render_page(StatusPage(title, "stack", NIGHT, NIGHT - window, NIGHT, statuses=statuses, grids=grids))


@needs_browser
def test_the_bad_nights_page_at_a_phones_width(
    tables: Any, template: Template, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    """At 400 px the picture comes first and is whole: the failing X at 22:00 on the screen, above the
    table, however many partitions fail; nothing wider than the window, no grid scrolling sideways."""
    page = _bad_night_page(template, LocalTarget(template, dynamodb_endpoint), tables)
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page

    shown = _render_in_chromium(page, tmp_path, "status-page-400px", width=400)

    assert shown["viewport"] == 400
    assert shown["pageWidth"] <= shown["viewport"]
    assert shown["title"]["content"] <= shown["title"]["width"] <= shown["viewport"]
    for box in shown["boxes"]:
        assert box["content"] <= box["width"] or (box["scrolls"] == "auto" and not box["grid"]), box
    [failing] = [c for c in shown["cells"] if c["state"] == "failing"]
    assert failing["letter"] == "X"
    assert failing["title"].startswith("2026-11-29T22:00:00Z: failing")
    assert failing["left"] >= 0, failing
    assert failing["right"] <= shown["viewport"], failing
    assert failing["width"] >= 14
    # The picture first: the failing cell in the frame without scrolling it (1400 px, nine days of an
    # hourly grid under a long title), above the status table and every error, however many.
    assert failing["bottom"] <= 1400, failing
    assert failing["bottom"] < shown["statusTop"]
    assert "2026-11-29T22:00:00Z failing" in shown["status"][JOB]["last failure"]
    # 64 identical troubles are one line with their count, the partitions named by number.
    text = shown["text"]
    assert text.count(NIGHT_ERROR) <= 3, text  # the 04:00 tick's error, its last failure, the grouped line
    assert (
        f"64 partitions retrying (receive 3, last error: {NIGHT_ERROR}): p0, p1, p2, p3, p4, p5, p6, p7, … (56 more)"
    ) in text


def test_cli_status_writes_the_html_page(
    tables: Any, template: Template, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from clockless_tools.cli.app import app

    page = tmp_path / "status.html"
    result = CliRunner().invoke(app, ["status", "--endpoint", dynamodb_endpoint, "--html", str(page)])

    assert result.stderr == f"status page written to {page}\n"
    written = page.read_text(encoding="utf-8")
    assert written.count('<div class="grid') == len(template.jobs)
    assert written.count('<tr data-job="') == len(template.jobs)
    assert "legend: F failed" in result.stdout
    # each job's overlap policy, as its code declares it, above its grid (terminal and page)
    assert result.stdout.count("; overlap: ") == written.count("; overlap: ") == len(template.jobs)
