"""A job with a local time on moto's server: every delivery, a tick's, a duplicate's or one dropped as
`not_a_tick`, asks the ledger one Query more (counted against `clockless bench requests`), and a
zone whose local tick did not succeed by its grace is named in an ERROR line and a `LocalTickMissed`
datapoint by job and zone, and by job alone for its alarm; a zone whose tick succeeded is not."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from clockless import JobRun, ScheduledJob, Tick, Trigger
from clockless.job import OUTCOME_NOT_A_TICK
from clockless_tools.bench import requests as expected
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaContext
from tests.integration.conftest import scan_all

NY, CHICAGO = "America/New_York", "America/Chicago"
CONTEXT = LocalLambdaContext("notices-fn", 512, 60, "arn:aws:lambda:us-east-1:1:function:notices-fn")


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _event(at: str, attempt: int = 1) -> dict[str, Any]:
    return Tick("notices", _at(at), "arn:aws:scheduler:::schedule/default/notices", attempt, f"e-{at}-{attempt}",
                Trigger.SCHEDULE).to_event()  # fmt: skip


@pytest.fixture
def notices(kit_env: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """07:30 in New York (12:30Z in winter) and Chicago (13:30Z), a 50-minute grace."""
    monkeypatch.setenv("LOCAL_TIME", "07:30")
    monkeypatch.setenv("OPERATING_TIME_ZONES", f"{NY},{CHICAGO}")
    monkeypatch.setenv("LOCAL_TICK_GRACE_MINUTES", "50")
    job = ScheduledJob("notices")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {}

    return handler


def _deliver(handler: Any, at: str, *, attempt: int = 1, late: timedelta = timedelta(seconds=5)) -> Any:
    with time_machine.travel(_at(at) + late, tick=False), count_requests() as requests:
        result = handler(_event(at, attempt), CONTEXT)
    return result, dict(requests.operations)


def _missed(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    found = [record for record in caplog.records if record.getMessage() == "local tick missed"]
    caplog.clear()
    return found


def test_each_delivery_asks_one_query_more_and_a_missed_zone_is_named(
    notices: Any, kit_env: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Given New York's 07:30 tick of 11 January 2027 delivered, and delivered again
    first, first_requests = _deliver(notices, "2027-01-11T12:30")
    _, duplicate_requests = _deliver(notices, "2027-01-11T12:30", attempt=2)

    # Then each asks the kit's share and one Query more
    assert first["outcome"] == "executed"
    assert first_requests == expected.first_delivery() | expected.local_tick_watch()
    assert duplicate_requests == expected.duplicate_delivery() | expected.local_tick_watch()
    assert _missed(caplog) == []
    capsys.readouterr()

    # When Chicago's 13:30Z tick never comes, and the cron's next instant (11:30Z, 07:30 nowhere in winter) does
    dropped, dropped_requests = _deliver(notices, "2027-01-12T11:30")

    # Then that delivery is dropped unclaimed, asking the one Query alone
    assert dropped["outcome"] == OUTCOME_NOT_A_TICK
    assert dropped_requests == expected.local_tick_watch()
    assert [item["scheduled_time"]["S"] for item in scan_all(kit_env, "LedgerTable")] == ["2027-01-11T12:30:00Z"]

    # And Chicago is named: its tick due, none of its own seen; New York is not
    (line,) = _missed(caplog)
    assert line.levelno == logging.ERROR
    named = {key: getattr(line, key) for key in ("job", "zone", "due", "last_local_tick_succeeded")}
    assert named == {
        "job": "notices",
        "zone": CHICAGO,
        "due": "2027-01-11T13:30:00Z",
        "last_local_tick_succeeded": "none read",
    }
    output = capsys.readouterr().out
    # And its datapoint is by job and zone, and by job alone (what the job's alarm watches)
    (metric,) = [json.loads(x) for x in output.splitlines() if '"LocalTickMissed"' in x]
    assert metric["LocalTickMissed"] == [1.0]
    assert metric["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["job", "zone", "service"], ["job", "service"]]
    assert (metric["job"], metric["zone"], metric["service"]) == ("notices", CHICAGO, "notices")


def test_a_zone_whose_tick_succeeded_is_not_named(notices: Any, caplog: pytest.LogCaptureFixture) -> None:
    # Given both zones' ticks of 11 January succeeded
    _deliver(notices, "2027-01-11T12:30")
    _deliver(notices, "2027-01-11T13:30")

    # When the next day's instants are delivered, New York's own tick among them
    _deliver(notices, "2027-01-12T11:30")
    ran, _ = _deliver(notices, "2027-01-12T12:30")

    # Then no zone is named
    assert ran["outcome"] == "executed"
    assert _missed(caplog) == []
