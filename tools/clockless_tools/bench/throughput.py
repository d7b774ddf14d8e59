"""3. Throughput: windows created per second at 10k due programs, as built (the tick fanned out to
its workers, as many at once as its event source mapping allows) against the naive loop."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from clockless.dynamo import tenant_of
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.meter import measure
from clockless_tools.bench.results import WINDOW_JOB, BenchError, BenchSizes, Figure
from clockless_tools.bench.rig import run_whole_tick, worker_concurrency
from clockless_tools.bench.workloads import Workload


def naive_window_generation(
    client: Any, programs_table: str, windows_table: str, *, business_date: date, tick_key: str
) -> int:
    """What a newcomer writes: scan for due programs, then for each window check that it does not
    exist, put it and move the program on. No transaction and no conditions, so a crash between
    the put and the update, or two deliveries at once, leave the tables inconsistent."""
    created = 0
    pages = client.get_paginator("scan").paginate(
        TableName=programs_table,
        FilterExpression="#status = :active AND current_window_end <= :date",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":active": {"S": "ACTIVE"}, ":date": {"S": business_date.isoformat()}},
    )
    for page in pages:
        for program in page["Items"]:
            tenant, program_id = tenant_of(program["tenant_key"]["S"]), program["program_id"]["S"]
            length = timedelta(days=int(program["window_length_days"]["N"]))
            end = date.fromisoformat(program["current_window_end"]["S"])
            while end <= business_date:
                key = {"program_key": {"S": f"{tenant}#{program_id}"}, "start_date": {"S": end.isoformat()}}
                if "Item" not in client.get_item(TableName=windows_table, Key=key):
                    window = {
                        **key,
                        "tenant_id": {"S": tenant},
                        "program_id": {"S": program_id},
                        "end_date": {"S": (end + length).isoformat()},
                        "created_for_tick": {"S": tick_key},
                    }
                    client.put_item(TableName=windows_table, Item=window)
                    created += 1
                end += length
                client.update_item(
                    TableName=programs_table,
                    Key={"tenant_key": program["tenant_key"], "program_id": {"S": program_id}},
                    UpdateExpression="SET current_window_end = :end",
                    ExpressionAttributeValues={":end": {"S": end.isoformat()}},
                )
    return created


def measure_throughput(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    workload = Workload(due_programs=sizes.throughput_programs)
    settings = harness.window_settings
    harness.reset_tables()
    harness.seed(workload, in_process=True)
    tick = harness.tick(WINDOW_JOB)
    workers = worker_concurrency(harness.template, WINDOW_JOB)
    built = run_whole_tick(harness, WINDOW_JOB, workers=workers)
    built_windows = built.applied
    built_stored = harness.count_items(settings.windows_table)

    harness.reset_tables()
    harness.seed(workload, in_process=True)
    naive = measure(
        lambda: naive_window_generation(
            harness.client,
            settings.programs_table,
            settings.windows_table,
            business_date=harness.layout.business_date,
            tick_key=tick.key,
        )
    )
    naive_stored = harness.count_items(settings.windows_table)
    if not built_windows == built_stored == naive.result == naive_stored == workload.windows_expected:
        raise BenchError(
            f"throughput: windows created differ (built {built_windows}/{built_stored}, "
            f"naive {naive.result}/{naive_stored}, expected {workload.windows_expected})"
        )
    windows = workload.windows_expected
    figures = [
        Figure(
            f"throughput.{WINDOW_JOB}.windows_per_second",
            f"{WINDOW_JOB}: windows per second, {sizes.throughput_programs:,} due programs, fanned out "
            f"({workers} workers, coordinator to finisher)",
            "windows/s",
            windows / built.seconds,
            windows / naive.seconds,
            "naive loop: scan, get, put, update",
        ),
        Figure(
            f"throughput.{WINDOW_JOB}.requests_per_window",
            f"{WINDOW_JOB}: requests per window (DynamoDB and SQS, the poller's apart)",
            "requests",
            built.requests / windows,
            naive.requests / windows,
            "naive loop: scan, get, put, update",
        ),
    ]
    details = {
        "due_programs": sizes.throughput_programs,
        "windows": windows,
        "built": {
            "seconds": round(built.seconds, 2),
            "operations": built.operations,
            "workers": workers,
            "invocations": built.invocations,
        },
        "naive": {"seconds": round(naive.seconds, 2), "operations": dict(naive.operations)},
    }
    return figures, details
