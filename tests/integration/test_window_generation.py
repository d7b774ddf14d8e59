"""Window generation takes effect once per tick however the tick and its partitions are delivered:
the coordinator fans the tick out over the 16 due-index shards, the workers roll each due program
forward in one conditional transaction, and the last partition done settles the tick."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from typing import Any

import pytest
import time_machine

from clockless import MalformedTickError
from clockless.dynamo import index_shard_for, tenant_keys
from clockless.fanout.settings import DEFAULT_PAGE_SIZE
from clockless_tools.bench import requests as expected
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaRuntime
from tests.conftest import load_event
from tests.index_keys import keys_per_partition_fixture
from tests.integration.conftest import delivery, scan_all
from tests.integration.work_queues import WorkQueues
from window_generation import repository
from window_generation.logic import Program
from window_generation.repository import (
    DUE_INDEX_SHARDS,
    TENANT_BUCKETS,
    DynamoProgramStore,
    ProgramModel,
    WindowPartitionWork,
    program_key,
    programs_partition_key,
)

TICK_SAMPLE = "window_generation/tick.json"
FN = "WindowGenerationFunction"
WORKER = "WindowGenerationWorkerFunction"
TICK_TIME = "2026-11-28T14:00:00Z"
# events/window_generation/tick.json is 2026-11-28T14:00:00Z: 04:00 in Honolulu, 09:00 in New York.
BUSINESS_DATE = date(2026, 11, 28)


def _seed() -> list[Program]:
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


def _tick_entry(tables: Any) -> dict[str, Any]:
    (entry,) = (
        item
        for item in scan_all(tables, "LedgerTable")
        if item["job"]["S"] == "window-generation" and item["scheduled_time"]["S"] == TICK_TIME
    )
    return entry


EXPECTED_WINDOWS = [
    ("tenant-a#p-behind", "2026-11-19", "2026-11-26"),
    ("tenant-a#p-behind", "2026-11-26", "2026-12-03"),
    ("tenant-a#p-due", "2026-11-28", "2026-12-05"),
]
FANNED_OUT = {"fan_out": {"partitions": DUE_INDEX_SHARDS}, "business_date": "2026-11-28"}
SETTLED = {"found": 2, "applied": 2, "already_done": 0, "failed": 0, "partitions": DUE_INDEX_SHARDS}


keys_per_partition = keys_per_partition_fixture(repository, "DUE_INDEX_KEYS", DUE_INDEX_SHARDS)


@pytest.fixture
def queues(
    tables: Any, function_env: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WorkQueues]:
    function_env(FN)
    function_env(WORKER)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", runtime.endpoint)
    work_queues = WorkQueues(runtime, WORKER, "WindowGenerationWorkQueue", "WindowGenerationWorkDeadLetterQueue")
    yield work_queues
    work_queues.delete()


@pytest.fixture
def ready(tables: Any, queues: WorkQueues) -> Any:
    _seed()
    return tables


def test_the_coordinator_fans_out_and_the_workers_roll_due_programs_forward_until_covered(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    result = runtime.call(FN, delivery(TICK_SAMPLE))

    assert result["outcome"] == "executed"
    assert result["summary"] == FANNED_OUT
    assert _windows(ready) == []
    assert _tick_entry(ready)["status"]["S"] == "started"
    partitions = queues.bodies(queues.queue)
    assert sorted(int(body["partition"]) for body in partitions) == list(range(DUE_INDEX_SHARDS))
    assert {body["params"]["business_date"] for body in partitions} == {"2026-11-28"}

    assert queues.drain() == DUE_INDEX_SHARDS

    assert _windows(ready) == EXPECTED_WINDOWS
    programs = {item["program_id"]["S"]: item for item in scan_all(ready, "ProgramsTable")}
    assert programs["p-behind"]["current_window_end"]["S"] == "2026-12-03"
    assert programs["p-due"]["current_window_end"]["S"] == "2026-12-05"
    assert programs["p-ahead"]["current_window_end"]["S"] == "2026-12-04"
    assert programs["p-ended"]["current_window_end"]["S"] == "2026-10-29"
    entry = _tick_entry(ready)
    assert entry["status"]["S"] == "succeeded"
    assert json.loads(entry["summary"]["S"]) == SETTLED


def test_duplicate_and_retried_deliveries_send_no_second_fan_out(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    first = delivery(TICK_SAMPLE)
    first_result = runtime.call(FN, first)

    same_event_again = runtime.call(FN, copy.deepcopy(first))
    scheduler_retry = runtime.call(FN, delivery(TICK_SAMPLE, attempt=2))

    assert same_event_again["outcome"] == scheduler_retry["outcome"] == "duplicate"
    assert same_event_again["summary"] == first_result["summary"]
    assert queues.drain() == DUE_INDEX_SHARDS
    assert _windows(ready) == EXPECTED_WINDOWS


def test_duplicate_partition_messages_apply_each_program_once(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    # SQS delivers at least once: every partition message arrives twice, one copy after the other.
    for body in queues.bodies(queues.queue):
        queues.client.send_message(QueueUrl=queues.url(queues.queue), MessageBody=json.dumps(body))

    assert queues.drain() == 2 * DUE_INDEX_SHARDS

    assert _windows(ready) == EXPECTED_WINDOWS
    assert json.loads(_tick_entry(ready)["summary"]["S"]) == SETTLED


def test_concurrent_burst_of_one_tick_fans_out_once(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    barrier = threading.Barrier(8)

    def deliver(_: int) -> str:
        event = delivery(TICK_SAMPLE)
        barrier.wait()
        return str(runtime.call(FN, event)["outcome"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(deliver, range(8)))

    assert outcomes.count("executed") == 1
    assert set(outcomes) <= {"executed", "duplicate", "duplicate_in_progress"}
    assert queues.drain() == DUE_INDEX_SHARDS
    assert _windows(ready) == EXPECTED_WINDOWS


def test_a_row_whose_key_sorts_after_every_date_is_found_and_fails_by_name(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    # Given an active program whose due-index key another client wrote as no date: `not-a-date`
    # sorts after every date, so no tick's `<=` range ever reaches it
    bad = Program("tenant-bad", "p-not-a-date", 7, BUSINESS_DATE)
    DynamoProgramStore("ProgramsTable", "WindowsTable").save_programs([bad])
    row = ProgramModel(programs_partition_key(bad.tenant_id, bad.program_id), bad.program_id)
    row.update(actions=[ProgramModel.current_window_end.set("not-a-date")])

    # When the tick runs
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()

    # Then the due programs are rolled, and the tick fails naming the row and its field, as it does
    # for a row inside the range that does not decode
    assert _windows(ready) == EXPECTED_WINDOWS
    entry = _tick_entry(ready)
    assert entry["status"]["S"] == "failed"
    assert program_key(bad.tenant_id, bad.program_id) in entry["failures"]["S"]
    assert "current_window_end" in entry["failures"]["S"]
    assert json.loads(entry["summary"]["S"])["failed"] == 1


def test_a_worker_run_that_fails_mid_partition_is_retried_after_the_first_backoff(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_writes = WindowPartitionWork.writes

    def connection_lost_on_behind(self: WindowPartitionWork, item: Program, *args: Any, **kwargs: Any) -> Any:
        if item.program_id == "p-behind":
            raise ConnectionError("injected: the worker lost its connection")
        return real_writes(self, item, *args, **kwargs)

    runtime.call(FN, delivery(TICK_SAMPLE))
    with monkeypatch.context() as patched:
        patched.setattr(WindowPartitionWork, "writes", connection_lost_on_behind)
        queues.drain()
    failed = [answer for answer in queues.answers if "error" in answer]
    assert len(failed) == 1
    assert "injected: the worker lost its connection" in failed[0]["error"]
    assert _windows(ready) == [("tenant-a#p-due", "2026-11-28", "2026-12-05")]
    assert _tick_entry(ready)["status"]["S"] == "started"

    # The failed run released its lease and asked for its message back after 10 s (the kit's first
    # backoff, ChangeMessageVisibility), not the queue's 1,800 s visibility timeout.
    with time_machine.travel(timedelta(seconds=11), tick=True):
        assert queues.drain() == 1

    assert _windows(ready) == EXPECTED_WINDOWS
    entry = _tick_entry(ready)
    assert entry["status"]["S"] == "succeeded"
    assert json.loads(entry["summary"]["S"]) == SETTLED


def test_redelivery_after_idempotency_record_expired_fans_out_again_and_changes_nothing(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    runtime.call(FN, delivery(TICK_SAMPLE))
    queues.drain()
    expiry_seconds = int(runtime.environment(FN)["IDEMPOTENCY_EXPIRY_SECONDS"])

    with time_machine.travel(timedelta(seconds=expiry_seconds + 60), tick=True):
        late = runtime.call(FN, delivery(TICK_SAMPLE, attempt=3))
        # The claim had expired, so the coordinator ran again; done partitions are no-ops.
        assert late["outcome"] == "executed"
        assert queues.drain() == DUE_INDEX_SHARDS

    assert _windows(ready) == EXPECTED_WINDOWS
    assert json.loads(_tick_entry(ready)["summary"]["S"]) == SETTLED


def test_malformed_tick_is_rejected_and_writes_nothing(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    before = {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]}

    with pytest.raises(MalformedTickError, match="scheduled_time"):
        runtime.call(FN, load_event("window_generation/malformed.json"))

    after = {table: scan_all(ready, table) for table in ready.list_tables()["TableNames"]}
    assert after == before
    assert after["IdempotencyTable"] == []
    assert queues.bodies(queues.queue) == []


@pytest.mark.parametrize("keys_per_partition", [2], indirect=True)
def test_requests_per_tick_coordinator_flat_and_workers_per_partition(
    ready: Any, runtime: LocalLambdaRuntime, queues: WorkQueues, keys_per_partition: int
) -> None:
    # Given due programs under both keys of one partition, besides the seed's two
    ids = (f"p-{i:04d}" for i in range(10_000))
    both = [next(p for p in ids if _shard("tenant-c", p) == key) for key in ("5", str(5 + DUE_INDEX_SHARDS))]
    DynamoProgramStore("ProgramsTable", "WindowsTable").save_programs(
        [Program("tenant-c", program_id, 7, BUSINESS_DATE) for program_id in both]
    )
    queues.url(queues.queue)
    with count_requests() as coordinator:
        runtime.call(FN, delivery(TICK_SAMPLE))
    with count_requests() as workers:
        queues.drain()

    # The coordinator reads no program, whatever their number; each partition run reads its keys
    # (the due programs' keys hold one each) and the last settles the tick: counted as the one
    # table of requests (docs/tick-flow.md) says.
    assert dict(coordinator.operations) == expected.coordinator(DUE_INDEX_SHARDS)
    due = [_shard(*key) for key in (("tenant-a", "p-due"), ("tenant-a", "p-behind"), *(("tenant-c", p) for p in both))]
    items = expected.items_by_key(due, DUE_INDEX_SHARDS, keys_per_partition * DUE_INDEX_SHARDS)
    assert sum(map(sum, items)) == 4
    assert _without_the_poller(workers) == expected.tick_workers(
        items, actions_per_item=2, page_size=DEFAULT_PAGE_SIZE, outside_queries=1
    )


def _shard(tenant_id: str, program_id: str) -> str:
    """The program's due-index key, of the count the test runs at (`keys_per_partition`)."""
    return index_shard_for(program_key(tenant_id, program_id), repository.DUE_INDEX_KEYS)


def _without_the_poller(requests: Any) -> dict[str, int]:
    """The workers' own requests: what the event source mapping sends (receive, delete) left out."""
    return {op: n for op, n in requests.operations.items() if op not in ("ReceiveMessage", "DeleteMessage")}


def test_due_programs_of_a_shard_are_rolled_49_to_a_transaction(
    tables: Any, runtime: LocalLambdaRuntime, queues: WorkQueues
) -> None:
    # 50 due programs, all in one shard: one transaction of 49 and one of 1
    ids = (f"p-{i:04d}" for i in range(10_000))
    in_shard = [program_id for program_id in ids if _shard("tenant-a", program_id) == "3"][:50]
    programs = [Program("tenant-a", program_id, 7, BUSINESS_DATE) for program_id in in_shard]
    DynamoProgramStore("ProgramsTable", "WindowsTable").save_programs(programs)

    runtime.call(FN, delivery(TICK_SAMPLE))
    with count_requests() as workers:
        queues.drain()

    # a window and a roll per program (2 actions), and the lane's counter: 49 programs a transaction
    # (2 for 50), besides each partition's lease and done transactions
    assert workers.of("TransactWriteItems") == 2 * DUE_INDEX_SHARDS + 2
    assert len(_windows(tables)) == 50
    assert json.loads(_tick_entry(tables)["summary"]["S"]) == SETTLED | {"found": 50, "applied": 50}


def test_a_tenants_programs_are_spread_over_its_buckets_and_read_back_by_tenant(tables: Any) -> None:
    # Given one tenant's programs (a whale: more programs than its key has buckets)
    store = DynamoProgramStore("ProgramsTable", "WindowsTable")
    whale = [Program("whale", f"p-{n:03d}", 7, BUSINESS_DATE) for n in range(64)]
    store.save_programs([*whale, Program("minnow", "p-000", 7, BUSINESS_DATE)])
    # Then they are under as many partition key values as the table declares, each `whale#<bucket>`
    keys = {item["tenant_key"]["S"] for item in scan_all(tables, "ProgramsTable")}
    assert keys - {programs_partition_key("minnow", "p-000")} == set(tenant_keys("whale", TENANT_BUCKETS))
    assert {programs_partition_key("whale", p.program_id) for p in whale} == set(tenant_keys("whale", TENANT_BUCKETS))
    # and a read by tenant goes over the buckets and finds them all, and only them
    assert sorted(store.programs_of("whale"), key=lambda p: p.program_id) == whale
