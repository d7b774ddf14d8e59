"""`make bench` on tiny sizes, so its machinery cannot rot. Request counts and ratios of exact
counts are asserted; wall-clock times never are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clockless_tools.bench import harness as bench
from clockless_tools.bench import workloads
from clockless_tools.bench.cold_start import import_attribution, import_seconds, source_setup
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.results import CLEANUP_JOB, QUICK, WINDOW_JOB, BenchError, BenchResults
from clockless_tools.bench.run import SECTIONS, run_bench
from clockless_tools.cli.bench import figures_markdown
from clockless_tools.local.moto_transactions import stock_transactions, transactions_snapshot_touched_items
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import Template
from tests.jobs import jobs

JOBS = (WINDOW_JOB, CLEANUP_JOB)


def _shards(job: str) -> int:
    """The job's index shards: its partitions per tick (its workers' MaximumConcurrency)."""
    (declared,) = [j.shards for j in jobs() if j.name == job]
    return declared


# The sections `make test` runs, a few seconds of CPU: what a tick costs (requests, write units,
# against bare and stock Powertools), and the coordinator. The rest (scale, batching, scaling,
# fanned-out ticks, the night model, and cold starts: eleven fresh interpreters, every handler
# against boto3), about 25 s more, are CI's (`slow`): `full_results`. One handler's import is timed
# and attributed in `make test` below, as the cold-start section does for each.
QUICK_SECTIONS = ("overhead", "versus_stock", "throughput", "coordinator")
SLOW = pytest.mark.slow


@pytest.fixture(scope="module")
def results(template: Template, dynamodb_endpoint: str) -> BenchResults:
    return run_bench(template, sizes=QUICK, endpoint=dynamodb_endpoint, only=QUICK_SECTIONS)


@pytest.fixture(scope="module")
def full_results(template: Template, dynamodb_endpoint: str) -> BenchResults:
    return run_bench(template, sizes=QUICK, endpoint=dynamodb_endpoint)


@pytest.mark.parametrize("job", JOBS)
def test_a_duplicate_delivery_costs_one_request_and_touches_no_domain_table(results: BenchResults, job: str) -> None:
    requests = results.figure(f"overhead.{job}.duplicate.requests")
    domain = results.figure(f"overhead.{job}.duplicate.domain_requests")

    assert (requests.value, requests.met) == (1, True)
    assert (domain.value, domain.met) == (0, True)
    # Without the kit, a redelivery sends the partition messages again, 10 to a SendMessageBatch.
    batches = -(-_shards(job) // 10)
    assert requests.baseline == batches
    assert results.details["overhead"][job]["operations"]["bare_redelivery"] == {"SendMessageBatch": batches}
    assert results.details["overhead"][job]["operations"]["kit_duplicate"] == {"TransactWriteItems": 1}


# Window generation never reads run.last_success, so the kit never queries the ledger for it.
KIT_ADDED = {
    "window-generation": ({"TransactWriteItems": 2}, 0.0),
    "session-cleanup": ({"Query": 1, "TransactWriteItems": 2}, 0.5),
}


@pytest.mark.parametrize("job", JOBS)
def test_a_first_delivery_pays_a_claim_and_a_completion_transaction_and_the_last_success_if_read(
    results: BenchResults, job: str
) -> None:
    figure = results.figure(f"overhead.{job}.first_delivery.requests")
    added, added_read_units = KIT_ADDED[job]

    assert figure.value - (figure.baseline or 0) == sum(added.values())
    assert figure.met is True
    assert results.details["overhead"][job]["operations"]["kit_added"] == added
    # The ledger's last-success query is the only read the kit adds: half a unit, eventually consistent.
    reads = results.figure(f"overhead.{job}.first_delivery.read_units")
    assert reads.value - (reads.baseline or 0) == added_read_units


# Measured against Powertools' own decorator on the same function: a claim PutItem and a
# completion UpdateItem (2 requests, 1 write unit each); the kit's are two-item transactions.
KIT_OVER_STOCK = {"window-generation": 0, "session-cleanup": 1}


@pytest.mark.parametrize("job", JOBS)
def test_a_first_delivery_costs_at_most_one_request_more_than_stock_idempotent(results: BenchResults, job: str) -> None:
    added = results.figure(f"versus_stock.{job}.first_delivery.added_requests")
    operations = results.details["versus_stock"][job]["operations"]

    assert operations["stock"]["added_over_bare"] == {"PutItem": 1, "UpdateItem": 1}
    assert added.baseline == 2
    assert added.value - added.baseline == KIT_OVER_STOCK[job]
    assert added.met is True


@pytest.mark.parametrize("job", JOBS)
def test_write_units_of_the_bookkeeping_are_counted_from_the_items_written(results: BenchResults, job: str) -> None:
    units = results.details["versus_stock"][job]["write_units"]
    added = results.figure(f"versus_stock.{job}.first_delivery.added_write_units")
    duplicate = results.figure(f"versus_stock.{job}.duplicate.write_units")

    # Stock: a claim and a completion of one small item each, and a failed conditional put.
    assert added.baseline == 2
    assert duplicate.baseline == 1
    # Kit: claim + ledger and completion + ledger, two items at 2 units each per transaction (a
    # fanned-out tick's success, and its index entry, are the finisher's); a duplicate is a
    # cancelled two-item transaction.
    assert added.value == 8
    assert units["kit"]["duplicate"] == {"table": 0.0, "index": 0.0, "cancelled_transactions_upper_bound": 4.0}
    # The job's own writes are the same in all three runs.
    assert units["bare"]["duplicate"]["table"] == 0


# Per item, transactional (2 units per KB of each item written): a window's Put and its program's
# Update, whose due-index entry moves (a delete and a put); a session's Delete, whose keys-only
# empty-index entry goes. Plus the lane's counter action, once per transaction.
ITEM_WRITE_UNITS = {
    "window-generation": ({"WindowsTable": 2.0, "ProgramsTable": 2.0}, 2.0),
    "session-cleanup": ({"SessionsTable": 2.0}, 1.0),
}


@SLOW
@pytest.mark.parametrize("job", JOBS)
def test_the_batched_path_costs_the_write_units_of_its_items_and_one_counter_per_transaction(
    full_results: BenchResults, job: str
) -> None:
    per_item = full_results.details["batching"][job]["per_item"]
    tables, index = ITEM_WRITE_UNITS[job]
    transactions = per_item["operations"]["TransactWriteItems"]

    by_table = dict(per_item["wcu_per_item_by_table"])
    assert by_table.pop("LedgerTable") == round(2 * transactions / per_item["items"], 3)
    assert by_table == tables
    assert list(per_item["wcu_per_item_by_index"].values()) == [index]
    # The kit's writer: a transaction holds 49 programs (98 actions) or 99 sessions, plus the counter.
    per_transaction = 49 if job == WINDOW_JOB else 99
    assert transactions >= -(-per_item["items"] // per_transaction)


@SLOW
@pytest.mark.parametrize("job", JOBS)
def test_batching_is_measured_against_the_loop_in_the_same_run(full_results: BenchResults, job: str) -> None:
    for writer in ("raw_concurrency_1", "kit_writer_concurrency_1", "kit_writer_concurrency_4"):
        figure = full_results.figure(f"batching.{job}.{writer}.items_per_second")
        assert figure.baseline is not None
        assert figure.baseline > 0
        assert "same added latency" in figure.baseline_label


@SLOW
@pytest.mark.parametrize("job", JOBS)
def test_the_night_model_names_its_bound_from_measured_inputs(full_results: BenchResults, job: str) -> None:
    night = full_results.details["night"][job]
    inputs = night["inputs"]
    assert inputs["wcu_per_item_by_index"][inputs["shard_index"]] > 0
    assert inputs["client_cpu_ms_per_item"] > 0
    for name, row in night["nights"].items():
        # the limit named at the p95 placement is the one that held the night longest there
        bound = row["seconds_bound_at_p95"]
        assert bound[row["bound_at_p95"]] == max(bound.values()), name
        assert row["expected_seconds"] <= row["p95_seconds"], name
        assert full_results.figure(f"night.{job}.{name}.seconds").value == pytest.approx(row["p95_seconds"], abs=0.1)
    # one tenant is never faster than many; warm never slower than cold
    p95 = {name: row["p95_seconds"] for name, row in night["nights"].items()}
    for size in ("1m", "10m"):
        for start in ("cold", "warm"):
            assert p95[f"{size}.spread.{start}"] <= p95[f"{size}.one_tenant.{start}"]
        assert p95[f"{size}.spread.warm"] <= p95[f"{size}.spread.cold"]
    cost = night["cost_per_1m_items"]
    assert cost["fanned_out"]["write_units"] >= cost["loop"]["write_units"] > 0  # transactions cost more units
    assert cost["fanned_out"]["total"] > 0


@pytest.mark.parametrize("job", JOBS)
def test_the_coordinator_sends_partitions_not_items_so_its_requests_stay_flat(results: BenchResults, job: str) -> None:
    requests = results.figure(f"coordinator.{job}.requests_per_tick")
    rows = results.details["coordinator"][job]["measured"]

    assert [row["due_items"] for row in rows] == list(QUICK.coordinator_due_items)
    assert requests.met is True
    assert rows[0]["operations"] == rows[-1]["operations"]
    assert rows[-1]["operations"]["SendMessageBatch"] == -(-rows[-1]["partitions"] // 10)
    assert results.details["coordinator"][job]["modelled_1m"]["requests"] == requests.value


@SLOW
@pytest.mark.parametrize("job", JOBS)
def test_a_fanned_out_tick_accounts_for_every_item_and_costs_its_items_writes_plus_bookkeeping(
    full_results: BenchResults, job: str
) -> None:
    tick = full_results.details["fanned_out"][job]["fanned_out"]
    loop = full_results.details["fanned_out"][job]["loop"]
    units = full_results.figure(f"fanned_out.{job}.per_item.write_units")

    assert tick["ledger"]["status"] == "succeeded"
    assert tick["ledger"]["summary"]["applied"] == QUICK.batching_items
    assert tick["ledger"]["partitions_done"] == tick["ledger"]["partitions_total"] == tick["invocations"]
    # The items' own writes are the loop's, transactional (the loop deletes a session with a plain
    # conditional DeleteItem: half the units); the rest is the fan-out's bookkeeping.
    transactional = 1 if job == WINDOW_JOB else 2
    bookkeeping = {"LedgerTable", "IdempotencyTable"}
    assert {name: u for name, u in tick["wcu_by_table"].items() if name not in bookkeeping} == {
        name: u * transactional for name, u in loop["write_units_by_table"].items() if name not in bookkeeping
    }
    assert units.value > (units.baseline or 0)
    assert "ReceiveMessage" not in tick["requests"]  # the poller's, not the function's


@SLOW
def test_every_worker_count_from_1_to_16_is_measured_against_linear_scaling(full_results: BenchResults) -> None:
    points = full_results.details["scaling"]["points"]

    assert [point["workers"] for point in points] == [1, 2, 4, 8, 16]
    assert points[0]["efficiency"] == 1.0
    for point in points[1:]:
        figure = full_results.figure(f"scaling.{WINDOW_JOB}.workers_{point['workers']}.items_per_second")
        assert figure.baseline == pytest.approx(points[0]["items_per_second"] * point["workers"], rel=0.01)
        assert 0 < point["client_cpu_ms_per_item"] <= point["cpu_ms_per_item"]


@SLOW
@pytest.mark.parametrize("job", JOBS)
def test_requests_and_read_units_per_tick_do_not_grow_with_the_table(full_results: BenchResults, job: str) -> None:
    for metric in ("requests", "read_units"):
        figure = full_results.figure(f"scale.{job}.{metric}_per_tick")
        assert figure.ratio == 1.0
        assert figure.met is True
    sizes = full_results.details["scale"][job]["sizes"]
    assert [row["table_items"] for row in sizes] == list(QUICK.scale_table_items)


@SLOW
def test_moto_reports_a_constant_consumed_capacity_so_read_units_are_computed(full_results: BenchResults) -> None:
    probe = full_results.details["scale"]["moto_consumed_capacity"]

    assert probe["all_items"]["bytes"] > probe["one_item"]["bytes"]
    assert probe["size_based"] is False


def test_the_fanned_out_job_and_the_naive_loop_create_the_same_windows(results: BenchResults) -> None:
    details = results.details["throughput"]

    assert details["windows"] == QUICK.throughput_programs
    # One invocation per partition (one per shard), each done in one run.
    assert details["built"]["invocations"] == _shards(WINDOW_JOB)
    assert details["built"]["operations"]["SendMessageBatch"] == -(-_shards(WINDOW_JOB) // 10)
    assert details["naive"]["operations"]["PutItem"] == details["windows"]


def test_a_handler_is_imported_in_a_fresh_interpreter_timed_and_attributed(
    template: Template, runtime: LocalLambdaRuntime
) -> None:
    setup = source_setup(template)
    logical_id, function = next(iter(template.functions.items()))
    module = function.handler.rpartition(".")[0]
    environment = runtime.environment(logical_id)

    baseline = import_seconds("boto3", setup.baseline_paths, isolated=setup.isolated)
    seconds = import_seconds(module, setup.function_paths[logical_id], isolated=setup.isolated, env=environment)
    shares = import_attribution(module, setup.function_paths[logical_id], isolated=setup.isolated, env=environment)

    assert baseline > 0
    assert seconds > 0
    assert sum(shares.values()) == pytest.approx(100, abs=0.5)
    assert shares.get("the function's package", 0) > 0, shares


@SLOW
def test_every_handler_is_timed_against_import_boto3(full_results: BenchResults, template: Template) -> None:
    results = full_results
    for logical_id in template.functions:
        figure = results.figure(f"cold_start.source.{logical_id}.import_ms")
        assert figure.value > 0
        assert figure.baseline is not None
        assert figure.baseline > 0
        # a ratio over rounds, each round against its own baseline
        assert figure.ratio_estimate is not None
        assert figure.ratio_estimate.samples == QUICK.imports
    shares = results.details["cold_start"]["setups"]["source"]["importtime_share_percent"]
    assert set(shares) == set(template.functions)
    assert all(sum(groups.values()) == pytest.approx(100, abs=0.5) for groups in shares.values())


@SLOW
def test_results_are_written_under_stable_keys_and_shown_as_markdown(
    full_results: BenchResults, template: Template, tmp_path: Path
) -> None:
    path = tmp_path / "results.json"
    full_results.write(path)
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))

    expected = {
        f"overhead.{job}.{case}"
        for job in JOBS
        for case in (
            "first_delivery.requests",
            "first_delivery.read_units",
            "first_delivery.median_ms",
            "duplicate.requests",
            "duplicate.domain_requests",
            "duplicate.median_ms",
        )
    }
    expected |= {f"scale.{job}.{metric}_per_tick" for job in JOBS for metric in ("requests", "read_units", "wall_ms")}
    expected |= {f"throughput.{WINDOW_JOB}.windows_per_second", f"throughput.{WINDOW_JOB}.requests_per_window"}
    expected |= {
        f"batching.{job}.{case}"
        for job in JOBS
        for case in (
            "raw_concurrency_1.items_per_second",
            "kit_writer_concurrency_1.items_per_second",
            "kit_writer_concurrency_4.items_per_second",
            "per_item.requests",
            "per_item.write_units",
        )
    }
    expected |= {
        f"night.{job}.{size}.{tenancy}.{start}.seconds"
        for job in JOBS
        for size in ("1m", "10m")
        for tenancy in ("one_tenant", "spread")
        for start in ("cold", "warm")
    }
    expected |= {f"night.{job}.cost_per_1m_items" for job in JOBS}
    expected |= {f"scaling.{WINDOW_JOB}.workers_{n}.items_per_second" for n in (2, 4, 8, 16)}
    expected |= {
        f"coordinator.{job}.{metric}"
        for job in JOBS
        for metric in ("requests_per_tick", "ms_per_tick", "ms_per_tick_1m_modelled")
    }
    expected |= {f"fanned_out.{job}.per_item.{metric}" for job in JOBS for metric in ("requests", "write_units")}
    expected |= {
        f"versus_stock.{job}.{case}"
        for job in JOBS
        for case in (
            "first_delivery.added_requests",
            "first_delivery.added_write_units",
            "duplicate.requests",
            "duplicate.write_units",
        )
    }
    expected |= {f"cold_start.source.{logical_id}.import_ms" for logical_id in template.functions}
    assert set(document["figures"]) == expected
    assert document["details"]["artifacts"] == {"skipped": "not asked for"}
    # a borrowed endpoint has no emulator to check the model against: said, not faked
    assert "skipped" in document["details"]["capacity_check"]
    markdown = figures_markdown(document)
    assert all(figure["label"] in markdown for figure in document["figures"].values())


def test_in_process_seeding_that_drifts_from_the_repositories_is_refused(
    template: Template, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an in-process seed that writes sessions unlike the repository does (counted, so out of
    # the empty index)
    harness = Harness(template, dynamodb_endpoint)
    monkeypatch.setattr(bench, "empty_session_item", lambda session: workloads.session_in_use_item(session, 1))

    # Then the bench refuses to measure anything on such data
    with pytest.raises(BenchError, match="in-process seeding writes different items"):
        harness.check_in_process_items_match_the_repositories()
    harness.reset_tables()


def _transact(client: Any, items: list[dict[str, Any]]) -> str:
    try:
        client.transact_write_items(TransactItems=items)
    except client.exceptions.TransactionCanceledException:
        return "cancelled"
    return "committed"


@pytest.mark.parametrize("patched", [False, True])
def test_a_cancelled_transaction_leaves_every_item_as_it_was_with_or_without_the_moto_transactions_patch(
    tables: Any, patched: bool
) -> None:
    # Given programs, and a transaction that creates a window, moves a program, then fails a check
    key, other = ({"tenant_key": {"S": "t#0"}, "program_id": {"S": name}} for name in ("p", "q"))
    for program in (key, other):
        tables.put_item(TableName="ProgramsTable", Item={**program, "current_window_end": {"S": "2026-01-01"}})
    window = {"program_key": {"S": "t#p"}, "start_date": {"S": "2026-01-01"}}
    transaction = [
        {"Put": {"TableName": "WindowsTable", "Item": window}},
        {
            "Update": {
                "TableName": "ProgramsTable",
                "Key": key,
                "UpdateExpression": "SET current_window_end = :end",
                "ExpressionAttributeValues": {":end": {"S": "2026-01-08"}},
            }
        },
        {
            "ConditionCheck": {
                "TableName": "ProgramsTable",
                "Key": other,
                "ConditionExpression": "attribute_not_exists(tenant_key)",
            }
        },
    ]

    # When it runs (the tests' server has the patch installed: stock_transactions takes it off)
    with transactions_snapshot_touched_items() if patched else stock_transactions():
        outcome = _transact(tables, transaction)

    # Then nothing of it remains
    assert outcome == "cancelled"
    assert "Item" not in tables.get_item(TableName="WindowsTable", Key=window)
    program = tables.get_item(TableName="ProgramsTable", Key=key)["Item"]
    assert program["current_window_end"] == {"S": "2026-01-01"}


def test_only_the_sections_asked_for_are_measured(template: Template, dynamodb_endpoint: str) -> None:
    partial = run_bench(template, sizes=QUICK, endpoint=dynamodb_endpoint, only=("versus_stock",))

    assert set(partial.details) == {"versus_stock"}
    assert {key.split(".", 1)[0] for key in partial.as_dict()["figures"]} == {"versus_stock"}
    with pytest.raises(
        BenchError,
        match="no bench section warmup; the sections are overhead, versus_stock, scale, throughput, batching, scaling",
    ):
        run_bench(template, sizes=QUICK, endpoint=dynamodb_endpoint, only=("warmup",))


def test_a_partial_run_replaces_only_its_sections_in_a_results_file(
    results: BenchResults, template: Template, dynamodb_endpoint: str
) -> None:
    full = results.as_dict()
    partial = run_bench(template, sizes=QUICK, endpoint=dynamodb_endpoint, only=("versus_stock",))

    merged = partial.merged_into(full, SECTIONS)

    assert list(merged["figures"]) == list(full["figures"])  # same keys, in section order
    assert merged["details"]["overhead"] == full["details"]["overhead"]
    assert set(merged["environment"]["sections_run"]) == {"versus_stock"}
    assert merged["environment"]["seconds"] == full["environment"]["seconds"]
