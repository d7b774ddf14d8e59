"""1b. The kit against stock Powertools `@idempotent`: what each adds to the same job function on a
first delivery and on a duplicate, in requests and write units, measured in the same run.

The stock handler is what a team writes without the kit: Powertools' `DynamoDBPersistenceLayer`
on the same idempotency table, keyed on the same `[job, scheduled_time]`, around the same job
function. It records no ledger: no attempts, no outcome per tick, nothing for `clockless status`
or the missed-tick check. The target (issue 16): a first delivery costs at most the stock
decorator's requests + 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig, idempotent

from clockless import JobRun, KitSettings, Tick
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.meter import Measured, measure
from clockless_tools.bench.overhead import OVERHEAD_WORKLOADS
from clockless_tools.bench.results import CLEANUP_JOB, WINDOW_JOB, BenchError, Figure

STOCK_LABEL: Final = "stock Powertools @idempotent around the same function"
ADDED_REQUESTS_OVER_STOCK: Final = 1


def stock_handler(harness: Harness, job: str) -> Callable[[dict[str, Any], Any], Any]:
    """The job function behind Powertools' own decorator, configured as its docs show."""
    function_id = harness.functions[job]
    bare = getattr(harness.runtime.handler(function_id), "__wrapped__", None)
    if bare is None:
        raise BenchError(f"{function_id}'s handler is not a ScheduledJob handler (no __wrapped__)")
    settings = KitSettings.from_env(harness.runtime.environment(function_id))
    with harness.function_environment(job):  # its client reads region and endpoint
        persistence = DynamoDBPersistenceLayer(table_name=settings.idempotency_table)
    config = IdempotencyConfig(
        event_key_jmespath="[job, scheduled_time]", expires_after_seconds=settings.idempotency_expiry_seconds
    )

    @idempotent(persistence_store=persistence, config=config)
    def handler(event: dict[str, Any], context: Any) -> Any:
        return bare(JobRun(tick=Tick.from_event(event, expected_job=job)))

    return handler


def _deliver_stock(harness: Harness, job: str, handler: Callable[[dict[str, Any], Any], Any], tick: Tick) -> Measured:
    function_id = harness.functions[job]
    with harness.function_environment(job):
        event, context = tick.to_event(), harness.runtime.context(function_id)
        return measure(
            lambda: handler(event, context),
            bookkeeping_tables=harness.bookkeeping_tables,
            write_units=True,
            allow_other_services=True,
        )


def _run_three_ways(harness: Harness, job: str) -> dict[str, tuple[Measured, Measured]]:
    """(first delivery, duplicate) for the bare function, stock @idempotent and the kit, each on
    freshly seeded tables; the bare function's duplicate runs it again on the same state."""
    workload = OVERHEAD_WORKLOADS[job]
    tick = harness.tick(job)
    stock = stock_handler(harness, job)
    runs: dict[str, Callable[[Tick], Measured]] = {
        "bare": lambda t: harness.call_bare(job, t, write_units=True),
        "stock": lambda t: _deliver_stock(harness, job, stock, t),
        "kit": lambda t: harness.deliver(job, t, write_units=True),
    }
    measured = {}
    for name, run in runs.items():
        harness.reset_tables()
        harness.seed(workload, in_process=True)
        first = run(tick)
        duplicate = run(harness.tick(job, attempt=2))
        measured[name] = (first, duplicate)
    summaries = {name: _summary(first.result) for name, (first, _) in measured.items()}
    if len({repr(summary) for summary in summaries.values()}) != 1:
        raise BenchError(f"{job}: bare, stock and kit did different work: {summaries}")
    if _summary(measured["stock"][1].result) != summaries["stock"]:
        raise BenchError(f"{job}: stock @idempotent did not return the first result to a duplicate")
    if measured["kit"][1].result.get("outcome") != "duplicate":
        raise BenchError(f"{job}: the kit did not suppress a duplicate: {measured['kit'][1].result}")
    return measured


def _summary(result: Mapping[str, Any]) -> Mapping[str, Any]:
    summary: Mapping[str, Any] = result.get("summary", result)  # the kit wraps it, stock returns it as is
    return summary


def _units(measured: Measured) -> dict[str, float]:
    writes = measured.writes
    assert writes is not None
    return {
        "table": writes.write_units,
        "index": writes.index_write_units,
        "cancelled_transactions_upper_bound": writes.cancelled_write_units,
    }


def measure_versus_stock(harness: Harness) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {
        "write_units": "computed from each item before and after the write (bench/write_units.py); "
        "a cancelled transaction's apart, priced as if committed: an upper bound",
    }
    for job in (WINDOW_JOB, CLEANUP_JOB):
        runs = _run_three_ways(harness, job)
        (bare, bare_again), (stock, stock_dup), (kit, kit_dup) = runs["bare"], runs["stock"], runs["kit"]
        stock_added, kit_added = stock.requests - bare.requests, kit.requests - bare.requests
        stock_wcu, kit_wcu = stock.write_units - bare.write_units, kit.write_units - bare.write_units
        kit_dup_wcu = kit_dup.write_units + _units(kit_dup)["cancelled_transactions_upper_bound"]
        stock_dup_wcu = stock_dup.write_units + _units(stock_dup)["cancelled_transactions_upper_bound"]
        key = f"versus_stock.{job}"
        figures += [
            Figure(
                f"{key}.first_delivery.added_requests",
                f"{job}: requests the kit adds to a first delivery",
                "requests",
                kit_added,
                stock_added,
                STOCK_LABEL,
                target=f"≤ stock + {ADDED_REQUESTS_OVER_STOCK}",
                met=kit_added <= stock_added + ADDED_REQUESTS_OVER_STOCK,
            ),
            Figure(
                f"{key}.first_delivery.added_write_units",
                f"{job}: write units the kit adds to a first delivery",
                "WCU",
                kit_wcu,
                stock_wcu,
                STOCK_LABEL,
            ),
            Figure(
                f"{key}.duplicate.requests",
                f"{job}: requests of a duplicate delivery",
                "requests",
                kit_dup.requests,
                stock_dup.requests,
                STOCK_LABEL,
                target="= stock",
                met=kit_dup.requests == stock_dup.requests,
            ),
            Figure(
                f"{key}.duplicate.write_units",
                f"{job}: write units of a duplicate delivery (kit: a cancelled transaction, upper bound)",
                "WCU",
                kit_dup_wcu,
                stock_dup_wcu,
                STOCK_LABEL,
            ),
        ]
        details[job] = {
            "operations": {
                name: {
                    "first_delivery": dict(first.operations),
                    "duplicate": dict(again.operations),
                    "added_over_bare": dict(sorted((Counter(first.operations) - Counter(bare.operations)).items())),
                }
                for name, (first, again) in runs.items()
            },
            "write_units": {
                name: {"first_delivery": _units(first), "duplicate": _units(again)}
                for name, (first, again) in runs.items()
            },
            "read_units": {
                name: {"first_delivery": first.read_units, "duplicate": again.read_units}
                for name, (first, again) in runs.items()
            },
            "bare_redelivery_requests": bare_again.requests,
        }
    return figures, details
