"""The kit's side of a fan-out coordinator: partitions_total in the claim, a completion that never
touches the status, TickFannedOut instead of TickSucceeded, and a clear error for a bad start."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from clockless.fanout import FanOut
from clockless.fanout.keys import tick_key
from clockless.job import ScheduledJob
from clockless.ledger import LedgerEntry, RunLedger
from clockless.tick import Tick, Trigger
from tests.unit.kit.conftest import Aws
from tests.unit.kit.toy import BUSINESS_DATE, TOY_JOB, Context, bodies, toy_job

SCHEDULED = f"{BUSINESS_DATE}T02:00:00Z"
TICK = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "attempt": "1", "trigger": "schedule"}


def _metrics(output: str) -> set[str]:
    names: set[str] = set()
    for line in output.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            document = json.loads(line)
            names.update(m["Name"] for m in document["_aws"]["CloudWatchMetrics"][0]["Metrics"])
    return names


def test_a_coordinator_emits_tick_fanned_out_never_tick_succeeded(aws: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, coordinator, _ = toy_job()
    coordinator(dict(TICK), Context())
    metrics = _metrics(capsys.readouterr().out)
    assert "TickFannedOut" in metrics
    assert "TickSucceeded" not in metrics


def test_the_coordinator_completion_leaves_a_finished_tick_succeeded(aws: Aws) -> None:
    ledger = RunLedger("LedgerTable", aws.dynamodb, retention_seconds=86400)
    tick = Tick(TOY_JOB, datetime(2026, 12, 1, 2, tzinfo=UTC), None, 1, None, Trigger.SCHEDULE)
    aws.dynamodb.update_item(**ledger.started_update(tick, "claim-1", first=True, partitions_total=4))
    # The workers finished before the coordinator's completion was written.
    aws.dynamodb.update_item(
        TableName="LedgerTable",
        Key=tick_key(TOY_JOB, SCHEDULED),
        UpdateExpression="SET #status = :succeeded, partitions_done = :four",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":succeeded": {"S": "succeeded"}, ":four": {"N": "4"}},
    )
    result = {"job": TOY_JOB, "scheduled_time": SCHEDULED, "finished_at": "2026-12-01T02:00:05Z", "summary": {"a": 1}}

    aws.dynamodb.update_item(**ledger.fanned_out_update(result))

    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"]
    entry = LedgerEntry.from_item(item)
    assert entry.status == "succeeded"
    assert (entry.partitions_total, entry.partitions_done) == (4, 4)
    assert entry.fanned_out_at == "2026-12-01T02:00:05Z"
    assert entry.coordinator_summary == {"a": 1}


def test_a_job_without_fan_out_keeps_its_ledger_shape(aws: Aws) -> None:
    ledger = RunLedger("LedgerTable", aws.dynamodb, retention_seconds=86400)
    tick = Tick("plain", datetime(2026, 12, 1, 2, tzinfo=UTC), None, 1, None, Trigger.SCHEDULE)
    update = ledger.started_update(tick, "claim-1", first=True)
    assert ":partitions_total" not in update["ExpressionAttributeValues"]
    aws.dynamodb.update_item(**update)
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key("plain", SCHEDULED))["Item"]
    assert LedgerEntry.from_item(item).partitions_total is None


@pytest.mark.parametrize(
    ("partitions", "problem"),
    [([], "at least one"), (["0", "0"], "unique"), (["a#b"], "without '#'"), ([""], "non-empty")],
)
def test_bad_partitions_are_refused_when_declared(partitions: list[str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        FanOut(ScheduledJob("declared"), partitions=partitions)


def test_a_job_fans_out_one_way_only() -> None:
    job = ScheduledJob("twice")
    FanOut(job, partitions=["0", "1"])
    with pytest.raises(ValueError, match="already fans out into 2"):
        FanOut(job, partitions=["0", "1", "2"])


def test_params_that_are_not_json_fail_the_start_and_send_nothing(aws: Aws) -> None:
    job = ScheduledJob(TOY_JOB)
    work = FanOut(job, partitions=["0"])

    @job.handler
    def coordinator(run: Any) -> Any:
        return work.start(run, params={"when": datetime(2026, 12, 1, tzinfo=UTC)})

    with pytest.raises(ValueError, match="params must be JSON"):
        coordinator(dict(TICK), Context())
    assert bodies(aws.sqs, aws.work_queue) == []
    item = aws.dynamodb.get_item(TableName="LedgerTable", Key=tick_key(TOY_JOB, SCHEDULED))["Item"]
    assert item["status"] == {"S": "failed"}


def test_a_coordinator_imports_no_worker_and_no_batch_utility() -> None:
    import subprocess
    import sys

    from tests.conftest import PROJECT_ROOT

    code = (
        f"import sys, json; sys.path[:0] = [{str(PROJECT_ROOT / 'layers/clockless')!r}]; "
        "from clockless.fanout import FanOut; print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))

    assert "clockless.fanout.coordinator" in loaded
    worker_side = {"dispatcher", "worker", "partition", "replay", "buffer", "finish", "redelivery", "writer"}
    assert not {f"clockless.fanout.{name}" for name in worker_side} & loaded
    assert not {m for m in loaded if m.startswith("aws_lambda_powertools.utilities.batch")}
