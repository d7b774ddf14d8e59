"""`clockless simulate` end to end: both replays on moto's server, each in its own process."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless import format_scheduled_time
from clockless_tools.cli.app import app
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.seed import SeedPlan, seed_jobs
from clockless_tools.simulate.request import expected_ticks
from clockless_tools.simulate.tables import bookkeeping_tables
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT
from tests.integration.conftest import scan_all
from tests.jobs import jobs as declared_jobs

DAY = datetime.fromisoformat("2026-11-27T00:00:00Z")


def _window(template: Template) -> tuple[datetime, datetime]:
    """The shortest span of whole hours (at least four) on DAY in which every job of the template
    ticks, the earliest of them: for the example jobs (one daily at 14:00, one hourly) 11:00 to
    15:00. Each job's showcase tick there meets every kind of delivery and every worker fault."""
    for hours in range(4, 25):
        for start in (DAY + timedelta(hours=h) for h in range(0, 25 - hours)):
            ticks = expected_ticks(template, start, start + timedelta(hours=hours))
            if all(ticks.values()):
                return start, start + timedelta(hours=hours)
    raise AssertionError(f"some job of the template does not tick on {DAY:%Y-%m-%d}")


START, END = _window(Template.load())
FROM, TO = format_scheduled_time(START), format_scheduled_time(END)
TICKS = expected_ticks(Template.load(), START, END)
# The job with the most ticks in the range gives up its fourth one (or its last).
BUSIEST = max(TICKS, key=lambda job: len(TICKS[job]))
DROPPED_AT = format_scheduled_time(TICKS[BUSIEST][min(3, len(TICKS[BUSIEST]) - 1)])
DROPPED = f"{BUSIEST}@{DROPPED_AT}"
BROKEN_JOBS = PROJECT_ROOT / "tests" / "fixtures" / "broken_jobs" / "template.yaml"
CLOCK_JOBS = PROJECT_ROOT / "tests" / "fixtures" / "clock_jobs" / "template.yaml"


def simulate(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["simulate", "--json", *args])
    assert result.stdout.strip(), f"no report (exit {result.exit_code}): {result.stderr}"
    return result.exit_code, json.loads(result.stdout)


def without_timing(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key != "seconds"}


@pytest.fixture(scope="module")
def four_hours() -> tuple[int, dict[str, Any]]:
    """The template's jobs over four hours, one tick dropped on request (one tenant keeps it quick)."""
    return simulate("--from", FROM, "--to", TO, "--seed", "11", "--drop", DROPPED, "--tenants", "1")


@pytest.fixture(scope="module")
def broken_jobs() -> tuple[int, dict[str, Any]]:
    """The fixture template: a counter job without the kit and a job that always fails."""
    return simulate("--template", str(BROKEN_JOBS), "--from", "2026-11-27T00:00:00Z", "--to", "2026-11-27T12:00:00Z")


def jobs(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {job["job"]: job for job in report["jobs"]}


def test_every_tick_of_four_hours_takes_effect_exactly_once_despite_extra_deliveries(
    four_hours: tuple[int, dict[str, Any]],
) -> None:
    code, report = four_hours

    assert code == 0
    assert report["ok"] is True
    template = Template.load()
    assert report["compared_tables"] == sorted(template.tables.keys() - bookkeeping_tables(template))
    by_job = jobs(report)
    assert {job: by_job[job]["ticks_expected"] for job in template.jobs} == {job: len(t) for job, t in TICKS.items()}
    assert all(TICKS.values()), f"every job should tick between {FROM} and {TO}: {TICKS}"
    for job in by_job.values():
        delivered = job["ticks_expected"] - len(job["ticks_dropped"])
        assert job["ticks_missed"] == []
        assert job["differences"] == []
        # The kit ran each delivered tick exactly once, however often it arrived.
        assert job["executions"] == delivered
        # Every kind of delivery happened to every job.
        assert all(count > 0 for count in job["deliveries_by_kind"].values()), job["deliveries_by_kind"]
        assert job["failures_injected"] > 0
        # Its showcase tick lost the answer to its claim (and botocore resent it), at least.
        assert job["responses_lost"] > 0
        assert job["effects"] == job["reference_effects"]
    # Some injected failures landed after writes had taken effect, and their retries still did not
    # duplicate anything.
    assert sum(job["failures_after_writes"] for job in by_job.values()) > 0
    # Every job had seeded work and did it: a verdict over no effect would prove nothing. A job
    # with no table of its own (the tick reaper writes the ledger only) has none to compare; it met
    # every fault above all the same.
    for job in (job for job in by_job.values() if job["tables"]):
        assert job["no_work"] is False
        assert sum(sum(effects.values()) for effects in job["effects"].values()) > 0, job["job"]
    # And the run says what it proved in one sentence, counted.
    applied = sum(sum(effects.values()) for job in by_job.values() for effects in job["effects"].values())
    delivered = sum(job["ticks_expected"] - len(job["ticks_dropped"]) for job in by_job.values())
    assert report["proved"].startswith(
        f"{delivered} ticks of {len(by_job)} jobs took effect exactly once: {applied} items applied, 0 twice, 0 lost, "
    )


def test_every_fanned_out_tick_completes_with_the_reference_counters_despite_worker_faults(
    four_hours: tuple[int, dict[str, Any]],
) -> None:
    _, report = four_hours

    fanned_out = {job.name for job in declared_jobs() if job.worker_id is not None}
    faults: dict[str, int] = {}
    for job in report["jobs"]:
        workers = job["workers"]
        delivered = job["ticks_expected"] - len(job["ticks_dropped"])
        if job["job"] not in fanned_out:
            # A job without fan-out does its work in the scheduled function: no tick is handed out.
            assert (workers["fanned_out_ticks"], workers["invocations"]) == (0, 0), job["job"]
            continue
        # Every tick fanned out to 16 partitions and finished: succeeded, every partition done,
        # found/applied/already done/failed as in the reference replay, nothing left in the DLQ.
        assert workers["fanned_out_ticks"] == workers["ticks_complete"] == delivered
        assert workers["ledger_differences"] == []
        assert workers["dead_lettered"] == 0
        assert workers["invocations"] >= 16 * delivered
        # Messages that failed came back and were done: every crash failed its invocation, and of a
        # duplicate's two concurrent invocations the one finding the lease held may be the recorded
        # one. A throttled request is waited out in its invocation and never sends its message back,
        # a lost answer is resent, and nothing fails without a fault.
        assert workers["redelivered"] > 0
        assert workers["failed"] > 0
        by_fault = workers["failed_by_fault"]
        assert by_fault["crash"] == workers["faults"]["crash"]
        assert by_fault["duplicate"] <= workers["faults"]["duplicate"]
        assert by_fault["throttled"] == by_fault["lost_answer"] == by_fault["none"] == 0, by_fault
        assert workers["failed"] == sum(by_fault.values())
        for kind, count in workers["faults"].items():
            faults[kind] = faults.get(kind, 0) + count
    # Each worker fault happened (every message of each job's showcase tick met one).
    assert all(count > 0 for count in faults.values()), faults


def test_the_report_numbers_reconcile(four_hours: tuple[int, dict[str, Any]]) -> None:
    _, report = four_hours

    for job in report["jobs"]:
        assert job["deliveries"] == job["executions"] + job["duplicates_suppressed"] + job["failures"]
        assert job["deliveries"] == sum(job["deliveries_by_kind"].values())
        assert job["deliveries_by_kind"]["tick"] == job["ticks_expected"] - len(job["ticks_dropped"])
        assert job["failures_injected"] <= job["failures"]
        assert job["failures_retried"] == job["failures"]  # all within the schedules' retry policies


def test_a_dropped_tick_is_reported_and_does_not_fail_the_run(four_hours: tuple[int, dict[str, Any]]) -> None:
    code, report = four_hours

    busiest = jobs(report)[BUSIEST]
    assert code == 0
    assert busiest["ticks_dropped"] == [DROPPED_AT]
    assert busiest["ticks_missed"] == []


@pytest.mark.slow  # two whole simulations for one property: CI runs it
def test_the_same_seed_gives_the_same_report() -> None:
    # Four hours with both jobs' ticks in them and one tenant keep this quick.
    window = ("--from", "2026-11-27T12:00:00Z", "--to", "2026-11-27T16:00:00Z", "--seed", "5", "--tenants", "1")

    _, first = simulate(*window)
    _, second = simulate(*window)

    assert without_timing(second) == without_timing(first)
    assert sum(job["failures_injected"] for job in first["jobs"]) > 0
    assert sum(job["deliveries_by_kind"]["concurrent"] for job in first["jobs"]) > 0


def test_a_job_whose_write_is_not_idempotent_fails_the_run_naming_the_items(
    broken_jobs: tuple[int, dict[str, Any]],
) -> None:
    code, report = broken_jobs

    counter = jobs(report)["counter"]
    assert code == 1
    assert report["ok"] is False
    assert counter["exactly_once"] is False
    assert counter["ticks_missed"] == []
    assert counter["differences"], "duplicated deliveries must show as differing items"
    for difference in counter["differences"]:
        assert difference["table"] == "CountersTable"
        assert difference["kind"] == "changed"
        assert set(difference["key"]) == {"job", "scheduled_time"}
        simulated, once = difference["attributes"]["deliveries"]
        assert int(simulated) > int(once) == 1


def test_a_job_that_always_fails_misses_every_tick(broken_jobs: tuple[int, dict[str, Any]]) -> None:
    code, report = broken_jobs

    failing = jobs(report)["failing"]
    assert code == 1
    assert failing["ticks_missed"] == ["failing@2026-11-27T00:00:00Z", "failing@2026-11-27T06:00:00Z"]
    assert failing["executions"] == 0
    assert failing["failures"] == failing["deliveries"]
    assert all("unreachable" in failure for failure in failing["reference_failures"])


def test_a_job_deciding_from_the_wall_clock_fails_exactly_once_where_the_same_job_on_its_tick_passes() -> None:
    # Given two idempotent jobs, one deciding as of its tick, the other as of datetime.now()
    code, report = simulate(
        "--template", str(CLOCK_JOBS), "--from", "2026-11-27T00:00:00Z", "--to", "2026-11-27T04:00:00Z"
    )

    # Then the simulation's deliveries (within the tick's minute, retried, late) decided otherwise
    # than the reference's on-time one for the clock job only, item by item
    on_the_tick, on_the_clock = jobs(report)["on-the-tick"], jobs(report)["on-the-clock"]
    assert code == 1
    assert on_the_tick["exactly_once"] is True
    assert on_the_tick["differences"] == []
    assert on_the_clock["exactly_once"] is False
    assert len(on_the_clock["differences"]) == on_the_clock["ticks_expected"] == 4
    for difference in on_the_clock["differences"]:
        simulated, on_time = difference["attributes"]["as_of"]
        assert on_time == difference["key"]["scheduled_time"]
        assert simulated > on_time
    assert "effects differ: on-the-clock" in report["proved"]


def test_the_simulation_can_run_on_a_running_dynamodb_whose_tables_stay_for_inspection(
    template: Template, tables: Any, dynamodb_endpoint: str
) -> None:
    # Given the embedded DynamoDB of `local up`, seeded like `local seed` does, and the busiest job's ticks
    start, end = datetime.fromisoformat("2026-11-28T00:00:00Z"), datetime.fromisoformat("2026-11-28T02:00:00Z")
    seed_jobs(LocalLambdaRuntime(template, dynamodb_endpoint), SeedPlan(tenants=1), start=start, end=end)
    ticks = expected_ticks(template, start, end)
    assert ticks[BUSIEST], f"{BUSIEST} should tick in {start}..{end}"
    dropped = ticks[BUSIEST][-1]

    # When the simulation runs there, with one tick dropped
    code, report = simulate(
        "--endpoint", dynamodb_endpoint, "--from", format_scheduled_time(start), "--to", format_scheduled_time(end),
        "--drop", f"{BUSIEST}@{format_scheduled_time(dropped)}",
    )  # fmt: skip

    # Then it passes, and the run ledger in that DynamoDB shows each delivered tick, not the dropped one
    assert code == 0, report
    assert report["endpoint"] == dynamodb_endpoint
    ledger = {
        (item["job"]["S"], item["scheduled_time"]["S"]): item["status"]["S"]
        for item in scan_all(tables, "LedgerTable")
        if not item["job"]["S"].endswith("#work")  # the partitions' records
    }
    assert ledger == {
        (job, format_scheduled_time(moment)): "succeeded"
        for job, moments in ticks.items()
        for moment in moments
        if (job, moment) != (BUSIEST, dropped)
    }


def test_bad_input_is_one_line_and_exit_code_2() -> None:
    cases = {
        ("--drop", "nightly-no-such-job@2026-11-27T14:00:00Z"): "unknown job",
        ("--drop", f"{BUSIEST}@2026-11-27T15:00:30Z"): f"not a tick of {BUSIEST}",
        ("--drop", BUSIEST): "must be JOB@UTC_TIME",
        ("--to", "2026-11-27T00:00:00"): "names no time zone",
        ("--from", "yesterday"): "not an ISO-8601 time",
        ("--from", TO, "--to", FROM): "is not before",
        ("--endpoint", "http://127.0.0.1:9"): "nothing answers",
        ("--endpoint", "localhost:8765"): "is not an http(s) URL",
        ("--full",): "give one of --full and --from",
        ("--keys-per-partition", "0"): "a partition reads one key or more",
    }
    for args, problem in cases.items():
        result = CliRunner().invoke(app, ["simulate", "--from", FROM, "--to", TO, *args])

        assert result.exit_code == 2, args
        assert problem in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.slow  # a third simulation, its faults met past a partition's first index key: CI runs it
def test_every_fanned_out_tick_takes_effect_once_when_each_partition_reads_two_index_keys() -> None:
    code, report = simulate("--from", FROM, "--to", TO, "--seed", "11", "--tenants", "1", "--keys-per-partition", "2")

    assert code == 0, report["proved"]
    assert "index keys: 2 per partition" in report["seeded"], report["seeded"]
    assert all(job["workers"]["ledger_differences"] == [] for job in report["jobs"])
