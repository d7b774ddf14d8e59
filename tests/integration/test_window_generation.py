"""Window generation takes effect once per tick however the tick is delivered."""

from __future__ import annotations

import copy
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from typing import Any

import pytest
import time_machine

from clockless import MalformedTickError
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaRuntime
from tests.conftest import load_event
from tests.integration.conftest import delivery, scan_all
from window_generation.logic import Program
from window_generation.repository import DynamoProgramStore

TICK_SAMPLE = "window_generation/tick.json"
FN = "WindowGenerationFunction"
# events/window_generation/tick.json is 2026-11-28T14:00:00Z: 04:00 in Honolulu, 09:00 in New York.
BUSINESS_DATE = date(2026, 11, 28)


def _seed(tables: Any) -> list[Program]:
    programs = [
        # due today: one window
        Program("tenant-a", "p-due", 7, BUSINESS_DATE),
        # missed nine nights: two 7-day windows to cover the business date
        Program("tenant-a", "p-behind", 7, BUSINESS_DATE - timedelta(days=9)),
        # not due until next week
        Program("tenant-b", "p-ahead", 14, BUSINESS_DATE + timedelta(days=6)),
    ]
    store = DynamoProgramStore("ProgramsTable", "WindowsTable")
    store.save_programs(programs)
    store.save_programs([Program("tenant-b", "p-ended", 7, BUSINESS_DATE - timedelta(days=30))], active=False)
    return programs


def _windows(tables: Any) -> list[tuple[str, str, str]]:
    return sorted(
        (item["program_key"]["S"], item["start_date"]["S"], item["end_date"]["S"])
        for item in scan_all(tables, "WindowsTable")
    )


EXPECTED_WINDOWS = [
    ("tenant-a#p-behind", "2026-11-19", "2026-11-26"),
    ("tenant-a#p-behind", "2026-11-26", "2026-12-03"),
    ("tenant-a#p-due", "2026-11-28", "2026-12-05"),
]


@pytest.fixture
def ready(tables: Any, function_env: Any) -> Any:
    function_env(FN)
    _seed(tables)
    return tables


def test_first_delivery_rolls_due_programs_forward_until_covered(ready: Any, runtime: LocalLambdaRuntime) -> None:
    result = runtime.call(FN, delivery(TICK_SAMPLE))

    assert result["outcome"] == "executed"
    assert result["summary"] == {
        "business_date": "2026-11-28",
        "programs_due": 2,
        "windows_created": 3,
        "already_rolled": 0,
    }
    assert _windows(ready) == EXPECTED_WINDOWS
    programs = {item["program_id"]["S"]: item for item in scan_all(ready, "ProgramsTable")}
    assert programs["p-behind"]["current_window_end"]["S"] == "2026-12-03"
    assert programs["p-due"]["current_window_end"]["S"] == "2026-12-05"
    assert programs["p-ahead"]["current_window_end"]["S"] == "2026-12-04"
    assert programs["p-ended"]["current_window_end"]["S"] == "2026-10-29"


def test_duplicate_and_retried_deliveries_create_no_second_window(ready: Any, runtime: LocalLambdaRuntime) -> None:
    first = delivery(TICK_SAMPLE)
    first_result = runtime.call(FN, first)

    same_event_again = runtime.call(FN, copy.deepcopy(first))
    scheduler_retry = runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))

    assert same_event_again["outcome"] == scheduler_retry["outcome"] == "duplicate"
    assert same_event_again["summary"] == first_result["summary"]
    assert _windows(ready) == EXPECTED_WINDOWS


def test_concurrent_burst_of_one_tick_has_one_effect(ready: Any, runtime: LocalLambdaRuntime) -> None:
    barrier = threading.Barrier(8)

    def deliver(_: int) -> str:
        event = delivery(TICK_SAMPLE)
        barrier.wait()
        return str(runtime.call(FN, event)["outcome"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(deliver, range(8)))

    assert outcomes.count("executed") == 1
    assert set(outcomes) <= {"executed", "duplicate", "duplicate_in_progress"}
    assert _windows(ready) == EXPECTED_WINDOWS


def test_failure_mid_run_then_retry_completes_without_duplicate(
    ready: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_roll_forward = DynamoProgramStore.roll_forward
    calls = {"n": 0}

    def fail_on_second_window(self: DynamoProgramStore, *args: Any, **kwargs: Any) -> bool:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ConnectionError("injected: lost the connection after one window")
        return real_roll_forward(self, *args, **kwargs)

    monkeypatch.setattr(DynamoProgramStore, "roll_forward", fail_on_second_window)
    with pytest.raises(ConnectionError):
        runtime.call(FN, delivery(TICK_SAMPLE, attempt=1))
    assert len(_windows(ready)) == 1

    monkeypatch.setattr(DynamoProgramStore, "roll_forward", real_roll_forward)
    retry = runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))

    assert retry["outcome"] == "executed"
    assert retry["summary"]["windows_created"] == 2
    assert _windows(ready) == EXPECTED_WINDOWS


def test_redelivery_after_idempotency_record_expired_creates_no_duplicate(
    ready: Any, runtime: LocalLambdaRuntime
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    expiry_seconds = int(runtime.environment(FN)["IDEMPOTENCY_EXPIRY_SECONDS"])

    with time_machine.travel(timedelta(seconds=expiry_seconds + 60), tick=True):
        late = runtime.call(FN, delivery(TICK_SAMPLE, attempt=3))

    # The claim had expired, so the job ran again; the domain's own conditions made it a no-op.
    assert late["outcome"] == "executed"
    assert late["summary"]["windows_created"] == 0
    assert _windows(ready) == EXPECTED_WINDOWS


def test_malformed_tick_is_rejected_and_writes_nothing(ready: Any, runtime: LocalLambdaRuntime) -> None:
    before = {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]}

    with pytest.raises(MalformedTickError, match="scheduled_time"):
        runtime.call(FN, load_event("window_generation/malformed.json"))

    after = {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]}
    assert after == before
    assert after["IdempotencyTable"] == []


def test_first_delivery_costs_two_kit_requests_plus_the_job_own(ready: Any, runtime: LocalLambdaRuntime) -> None:
    with count_requests() as requests:
        runtime.call(FN, delivery(TICK_SAMPLE))

    # kit: claim + ledger started, completion + ledger succeeded (two TransactWriteItems); no
    #      last-success Query, as this job never reads run.last_success
    # job: one Query per due-index shard, one TransactWriteItems per window
    assert dict(requests.operations) == {"Query": 16, "TransactWriteItems": 2 + 3}
