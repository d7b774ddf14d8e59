"""`clockless shards check` against a stack on moto: a fanned-out job's shard count lowered below
its latest tick's is refused unless the job is paused and no tick of it is still started; a raise,
an unchanged count and a stack not deployed yet pass."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from clockless.pause import PAUSED, history_key, state_item
from clockless_tools.cli.app import app
from clockless_tools.operations.connection import open_stack, resolve_connection
from clockless_tools.operations.shards import check_shards, declared_shards
from clockless_tools.operations.targets import StackTarget
from clockless_tools.template.loader import DEFAULT_TEMPLATE
from tests.jobs import Job, jobs, project_template

FANNED_OUT = [job for job in jobs() if job.shards]
STACK = ["--stack", "clockless-test", "--region", "us-east-1"]


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[StackTarget]:
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_CLOUDFORMATION"):
        monkeypatch.delenv(name, raising=False)
    ledger = dict(project_template().resources["LedgerTable"])
    ledger.pop("Metadata", None)
    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        body = json.dumps({"Resources": {"LedgerTable": ledger}})
        session.client("cloudformation").create_stack(StackName="clockless-test", TemplateBody=body)
        connection = resolve_connection(
            "clockless-test",
            region="us-east-1",
            profile=None,
            samconfig=DEFAULT_TEMPLATE.parent / "x.toml",
            config_env="default",
        )
        yield open_stack(project_template(), connection)


def _tick(target: StackTarget, job: str, scheduled_time: str, partitions: int, status: str = "succeeded") -> None:
    ledger = target.ledger()
    item = ledger.key(job, scheduled_time) | {
        "status": {"S": status},
        "partitions_total": {"N": str(partitions)},
    }
    ledger.client.put_item(TableName=ledger.table_name, Item=item)


def _pause(target: StackTarget, job: str) -> None:
    ledger = target.ledger()
    key = ledger.key(job, history_key(datetime(2026, 12, 1, tzinfo=UTC)))
    item = state_item(key, action=PAUSED, at="2026-12-01T00:00:00Z", by="test", reason="lowering its shards")
    ledger.client.put_item(TableName=ledger.table_name, Item=item)


@pytest.mark.parametrize("job", FANNED_OUT, ids=lambda job: job.name)
def test_a_lowered_count_is_refused_by_name_while_the_job_runs(stack: StackTarget, job: Job) -> None:
    name, shards = job.name, job.shards
    _tick(stack, name, "2026-12-01T13:00:00Z", shards * 2)
    _tick(stack, name, "2026-12-01T14:00:00Z", shards * 2)

    (check,) = [c for c in check_shards(stack, {name: shards}) if c.job == name]

    assert check.refusal == (
        f"{name}: the template fans out into {shards} partitions, but its tick 2026-12-01T14:00:00Z was fanned "
        f"out into {shards * 2}: the items under shards {shards} to {shards * 2 - 1} would be read by no tick; "
        "pause the job and follow the migration (docs/fan-out.md#changing-a-jobs-shard-count)"
    )


def test_a_lowered_count_waits_for_a_tick_still_started_though_the_job_is_paused(stack: StackTarget) -> None:
    name = FANNED_OUT[0].name
    _tick(stack, name, "2026-12-01T13:00:00Z", 8, status="started")
    _tick(stack, name, "2026-12-01T14:00:00Z", 8)
    _pause(stack, name)

    (check,) = check_shards(stack, {name: 4})

    assert check.refusal is not None
    assert "its tick 2026-12-01T13:00:00Z is still started" in check.refusal


def test_a_lowered_count_passes_once_the_job_is_paused_and_settled(stack: StackTarget) -> None:
    name = FANNED_OUT[0].name
    _tick(stack, name, "2026-12-01T14:00:00Z", 8, status="failed")
    _pause(stack, name)

    (check,) = check_shards(stack, {name: 4})

    assert check.refusal is None
    assert "move the items under shards 4 to 7 before resuming" in check.line()


@pytest.mark.parametrize(("before", "after", "said"), [(4, 8, "raised from 4"), (8, 8, "unchanged")])
def test_a_raised_or_unchanged_count_passes(stack: StackTarget, before: int, after: int, said: str) -> None:
    name = FANNED_OUT[0].name
    _tick(stack, name, "2026-12-01T14:00:00Z", before)

    (check,) = check_shards(stack, {name: after})

    assert check.refusal is None
    assert check.line() == f"{name}: {after} partitions, {said}"


def test_the_command_exits_1_naming_each_lowered_job_and_0_otherwise(stack: StackTarget) -> None:
    declared = declared_shards(project_template())
    assert {job.name: job.shards for job in FANNED_OUT} == declared
    for name, shards in declared.items():
        _tick(stack, name, "2026-12-01T14:00:00Z", shards)
    runner = CliRunner()

    passed = runner.invoke(app, ["shards", "check", *STACK])
    lowered = FANNED_OUT[0]
    _tick(stack, lowered.name, "2026-12-01T15:00:00Z", lowered.shards + 1)
    refused = runner.invoke(app, ["shards", "check", *STACK])

    assert passed.exit_code == 0, passed.output
    assert refused.exit_code == 1, refused.output
    refusals = [line for line in refused.output.splitlines() if line.startswith("refused: ")]
    assert len(refusals) == 1
    assert refusals[0].startswith(f"refused: {lowered.name}: the template fans out into {lowered.shards} partitions")


def test_before_a_first_deploy_there_is_nothing_to_compare(stack: StackTarget) -> None:
    result = CliRunner().invoke(
        app, ["shards", "check", "--before-deploy", "--stack", "not-yet", "--region", "us-east-1"]
    )

    assert result.exit_code == 0, result.output
    assert "stack 'not-yet' is not deployed yet: no tick to compare" in result.output


def test_a_stack_not_found_is_an_error_without_before_deploy(stack: StackTarget) -> None:
    result = CliRunner().invoke(app, ["shards", "check", "--stack", "not-yet", "--region", "us-east-1"])

    assert result.exit_code == 2
