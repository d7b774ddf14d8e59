"""A job with a local time (07:30 in New York and Chicago, its cron at 11:30, 12:30 and 13:30 UTC):
`clockless status`, `clockless backfill` and the status page's grid expect only the cron's instants
that are 07:30 somewhere. The third instant of each day is no tick, so it is never missed, never
replayed and never drawn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clockless_tools.operations.backfill import BackfillPolicy, backfill
from clockless_tools.operations.grid import job_grid
from clockless_tools.operations.status import job_status
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT
from tests.jobs import LOCAL_TIME_0730, declared, jobs

PLAIN = next(job for job in jobs() if job.worker_id is None)
# Two winter days: 07:30 is 12:30Z in New York and 13:30Z in Chicago; 11:30Z is 06:30 and 05:30 there.
START = datetime(2027, 1, 11, tzinfo=UTC)
NOW = START + timedelta(days=2)
LOCAL_TICKS = [START + timedelta(days=day, hours=hour, minutes=30) for day in (0, 1) for hour in (12, 13)]


@pytest.fixture
def local_template(tmp_path: Path) -> Template:
    text = declared((PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8"), PLAIN, LOCAL_TIME_0730)
    for code in ("functions", "layers"):
        (tmp_path / code).symlink_to(PROJECT_ROOT / code)
    (tmp_path / "template.yaml").write_text(text, encoding="utf-8")
    return Template.load(tmp_path / "template.yaml")


def test_status_and_backfill_expect_only_the_local_ticks(
    local_template: Template, tables: Any, local_queues: Any, dynamodb_endpoint: str
) -> None:
    # Given the job with no tick run over two winter days
    target = LocalTarget(local_template, dynamodb_endpoint)

    # When status looks back over them
    status = job_status(local_template, target, PLAIN.name, now=NOW, window=NOW - START)

    # Then it expects the four local ticks, and misses those, none at 11:30Z
    assert status.expected == len(LOCAL_TICKS)
    assert status.missing == LOCAL_TICKS
    assert status.next_ticks[:2] == [NOW + timedelta(hours=12, minutes=30), NOW + timedelta(hours=13, minutes=30)]

    # And backfill plans the same four
    planned = backfill(
        local_template, target, PLAIN.name, start=START, end=NOW, policy=BackfillPolicy.ALL, dry_run=True, now=NOW
    )
    assert planned.missing == planned.planned == LOCAL_TICKS
    assert planned.not_yet_due == 0


def test_the_status_page_draws_only_the_local_ticks(
    local_template: Template, tables: Any, local_queues: Any, dynamodb_endpoint: str
) -> None:
    target = LocalTarget(local_template, dynamodb_endpoint)

    grid = job_grid(local_template, target, PLAIN.name, now=NOW - timedelta(seconds=1), window=NOW - START)

    # Two ticks a day: a column per day, each of the two days' cells missed (the week's later days not yet
    # due), its tooltip naming 12:30Z and 13:30Z only
    assert not grid.hourly
    assert grid.counts()["missed"] == 2
    tips = " ".join(tip for row in grid.times for tip in row)
    assert all(f"{tick:%Y-%m-%dT%H:%M}" in tips for tick in LOCAL_TICKS)
    assert "T11:30" not in tips
