"""`clockless work show|redrive <job>` on the local runtime: the work dead-letter queue is read without
being changed, and redriven to the work queue, whose worker then applies the items once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.local.dynamodb import create_tables, delete_tables, dynamodb_client
from clockless_tools.local.queues import create_queues, queue_url, sqs_client
from clockless_tools.operations.targets import OperationError
from clockless_tools.operations.work import work_queues
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT

FANOUT = PROJECT_ROOT / "tests" / "fixtures" / "sqs_worker" / "fanout.yaml"
BROKEN_JOBS = PROJECT_ROOT / "tests" / "fixtures" / "broken_jobs" / "template.yaml"
TICK = "2026-11-27T03:00:00Z"
FAILED_ITEMS = {
    "kind": "items",
    "job": "producer",
    "scheduled_time": TICK,
    "trigger": "schedule",
    "partition": "3",
    "params": {},
    "items": [{"id": "a"}, {"id": "b"}],
    "error": "ValidationException: item too large",
    "id": f"{TICK}#0",
}
POISON_PARTITION = {"kind": "partition", "job": "producer", "scheduled_time": TICK, "partition": "5", "id": f"{TICK}#1"}


@pytest.fixture
def fanout(dynamodb_endpoint: str) -> Iterator[Any]:
    template = Template.load(FANOUT)
    create_tables(template, dynamodb_endpoint)
    create_queues(template, dynamodb_endpoint)
    client = sqs_client(dynamodb_endpoint)
    yield client
    for name in ("WorkQueue", "WorkDeadLetterQueue"):
        client.delete_queue(QueueUrl=queue_url(client, name))
    delete_tables(template, dynamodb_endpoint)


def work(endpoint: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["work", *args, "--template", str(FANOUT), "--endpoint", endpoint])


def test_show_counts_the_dead_letters_without_receiving_them(fanout: Any, dynamodb_endpoint: str) -> None:
    dead = queue_url(fanout, "WorkDeadLetterQueue")
    for body in (FAILED_ITEMS, POISON_PARTITION):
        fanout.send_message(QueueUrl=dead, MessageBody=json.dumps(body))

    shown = [work(dynamodb_endpoint, "show", "producer", "--json") for _ in range(3)]
    text = work(dynamodb_endpoint, "show", "producer")

    assert shown[-1].exit_code == 1  # dead letters are items not applied
    report = json.loads(shown[-1].stdout)
    assert (report["queue"], report["dead_letter_queue"], report["worker"]) == (
        "WorkQueue",
        "WorkDeadLetterQueue",
        "WorkerFunction",
    )
    assert (report["dead_letter_messages"], report["read_messages"]) == (2, False)
    assert "WorkDeadLetterQueue has 2 message(s)" in text.stdout
    assert "--messages reads every body" in text.stdout
    assert "replay them: clockless work redrive producer" in text.stdout
    # Looking received nothing: this first receive is each message's first.
    received = fanout.receive_message(QueueUrl=dead, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"])
    assert sorted(m["Attributes"]["ApproximateReceiveCount"] for m in received["Messages"]) == ["1", "1"]


def test_show_messages_reads_the_bodies_and_says_what_the_read_did(fanout: Any, dynamodb_endpoint: str) -> None:
    dead = queue_url(fanout, "WorkDeadLetterQueue")
    for body in (FAILED_ITEMS, POISON_PARTITION):
        fanout.send_message(QueueUrl=dead, MessageBody=json.dumps(body))

    shown = work(dynamodb_endpoint, "show", "producer", "--messages", "--json")
    again = work(dynamodb_endpoint, "show", "producer", "--messages")

    assert shown.exit_code == 1
    report = json.loads(shown.stdout)
    letters = sorted(report["dead_letters"], key=lambda letter: letter["kind"])
    assert [(x["kind"], x["scheduled_time"], x["partition"], x["items"], x["error"]) for x in letters] == [
        ("items", TICK, "3", 2, "ValidationException: item too large"),
        ("partition", TICK, "5", None, None),
    ]
    # The count before this read: never received before it.
    assert [x["receive_count"] for x in letters] == [0, 0]
    assert "read by receiving 2 message(s) (SQS has no peek)" in again.stdout
    attributes = fanout.get_queue_attributes(QueueUrl=dead, AttributeNames=["ApproximateNumberOfMessages"])
    assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "2"


def test_redrive_moves_every_dead_letter_back_and_the_worker_applies_them(fanout: Any, dynamodb_endpoint: str) -> None:
    dead = queue_url(fanout, "WorkDeadLetterQueue")
    for body in (FAILED_ITEMS, POISON_PARTITION):
        fanout.send_message(QueueUrl=dead, MessageBody=json.dumps(body))

    result = work(dynamodb_endpoint, "redrive", "producer")
    after = work(dynamodb_endpoint, "show", "producer", "--json")

    assert result.exit_code == 0, result.stderr
    assert "producer: moved 2 message(s) from WorkDeadLetterQueue to WorkQueue" in result.stdout
    assert "drained WorkQueue -> WorkerFunction: 2 message(s) in 2 invocation(s), all done" in result.stdout
    assert after.exit_code == 0
    assert json.loads(after.stdout)["dead_letters"] == []
    items = dynamodb_client(dynamodb_endpoint).scan(TableName="ItemsTable")["Items"]
    assert sorted(item["id"]["S"] for item in items) == [f"{TICK}#0", f"{TICK}#1"]


def test_a_job_without_a_work_queue_or_an_unknown_job_is_refused_in_one_line(
    fanout: Any, dynamodb_endpoint: str
) -> None:
    unknown = work(dynamodb_endpoint, "show", "nightly")

    assert unknown.exit_code == 2
    assert unknown.stderr == "error: unknown job 'nightly'; template.yaml schedules: producer\n"
    with pytest.raises(OperationError, match="counter does not fan out: CounterFunction names no queue"):
        work_queues(Template.load(BROKEN_JOBS), "counter")


def test_invoke_runs_the_workers_of_what_the_function_sent_unless_told_not_to(
    fanout: Any, dynamodb_endpoint: str, tmp_path: Any
) -> None:
    event = tmp_path / "tick.json"
    event.write_text(json.dumps({"job": "producer", "scheduled_time": TICK}), encoding="utf-8")
    command = ["invoke", "ProducerFunction", "-e", str(event), "--template", str(FANOUT)]

    held = CliRunner().invoke(app, [*command, "--endpoint", dynamodb_endpoint, "--no-drain"])
    drained = CliRunner().invoke(app, [*command, "--endpoint", dynamodb_endpoint])

    assert held.exit_code == 0, held.stderr
    assert json.loads(held.stdout) == {"sent": 3}
    assert "drained" not in held.stderr
    assert drained.exit_code == 0, drained.stderr
    # Both invocations' messages (the producer is not idempotent), each applied once by the worker.
    assert "drained WorkQueue -> WorkerFunction: 6 message(s) in 6 invocation(s), all done" in drained.stderr
    items = dynamodb_client(dynamodb_endpoint).scan(TableName="ItemsTable")["Items"]
    assert sorted(item["id"]["S"] for item in items) == [f"{TICK}#{i}" for i in range(3)]
