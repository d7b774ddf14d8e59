"""`sam local invoke` of every scheduled function with every sample of events/ (its tick, the tick's
retry, a malformed tick), and of its worker with an SQS event built from the messages the tick
queued, in real containers on the embedded stack; the rest of the tick's partitions through
`sam local start-lambda` and a boto3 Lambda client, as Lambda's SQS poller would hand them over.
Judged against `clockless invoke` of the same events on a stack holding the same data: the same
responses, the same errors, and the same tables and ledger item by item (clocks and claims aside).

Slow and in containers: `make test-containers` (CI runs it)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clockless_tools.local.poller import OUTCOME_DONE, Message, SqsPoller
from clockless_tools.local.runtime import LocalLambdaRuntime
from tests.conftest import EVENTS
from tests.containers.harness import SamLocal, Stack, _stable, differences, free_port, response_of
from tests.jobs import Job, jobs, project_template

pytestmark = [pytest.mark.slow, pytest.mark.containers]

SAMPLES = ("tick", "retry", "malformed")


def _reference(stack: Stack, job: Job, sample: str) -> subprocess.CompletedProcess[str]:
    return stack.cli(
        "invoke",
        job.function_id,
        "-e",
        str(EVENTS / job.package / f"{sample}.json"),
        "--endpoint",
        stack.endpoint,
        check=False,
    )


def _first_line(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout.splitlines()[0])


def _drain_through_sam(sam: SamLocal, workdir: Path) -> list[str]:
    """The work queues emptied as Lambda's poller would: the first batch by `sam local invoke`
    of the worker with its SQS event, every later one through `start-lambda` and boto3."""
    how: list[str] = []
    port = free_port()
    with sam.serving("start-lambda", port, "--warm-containers", "LAZY"):
        import boto3
        from botocore.config import Config

        lambda_client = boto3.client(
            "lambda",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(read_timeout=300, retries={"max_attempts": 0}),
        )

        def invoke(function_id: str, event: dict[str, Any], messages: Sequence[Message]) -> tuple[Any, Any]:
            if not how:
                path = workdir / f"{function_id}-sqs.json"
                path.write_text(json.dumps(event), encoding="utf-8")
                result = sam.invoke(function_id, path)
                how.append(f"sam local invoke {function_id}")
                assert result.returncode == 0, result.stderr
                return response_of(result), None
            answer = lambda_client.invoke(FunctionName=function_id, Payload=json.dumps(event).encode())
            how.append(f"start-lambda {function_id}")
            payload = json.loads(answer["Payload"].read() or b"null")
            assert "FunctionError" not in answer, payload
            return payload, None

        runtime = LocalLambdaRuntime(project_template(), sam.stack.endpoint)
        poller = SqsPoller(runtime, sam.stack.endpoint, invoke=invoke, parallel=False)
        invocations = poller.drain()
    assert [i.outcome for i in invocations] == [OUTCOME_DONE] * len(invocations)
    return how


@pytest.mark.parametrize("job", jobs(), ids=lambda job: job.name)
def test_every_sample_through_sam_local_invoke_does_what_clockless_invoke_does(
    sam_local: SamLocal, reference: Stack, job: Job, workdir: Path
) -> None:
    # The tick: SAM's container runs the coordinator (or the whole job without fan-out)
    tick = sam_local.invoke(job.function_id, EVENTS / job.package / "tick.json")
    assert tick.returncode == 0, tick.stderr
    answered = response_of(tick)
    assert answered["outcome"] == "executed", answered
    expected = _reference(reference, job, "tick")
    assert expected.returncode == 0, expected.stderr
    assert _stable(answered) == _stable(_first_line(expected))

    # Its worker, with what the coordinator queued (clockless invoke drained its own already)
    if job.worker_id is not None:
        how = _drain_through_sam(sam_local, workdir)
        assert how[0] == f"sam local invoke {job.worker_id}"
        assert len(how) >= job.shards, how  # a partition per shard at least (and their continuations)
    different = differences(sam_local.stack.contents(), reference.contents())
    assert not different, "\n".join(different)

    # The retry: a duplicate, answered with the first result and changing nothing
    before = sam_local.stack.contents()
    retry = sam_local.invoke(job.function_id, EVENTS / job.package / "retry.json")
    assert retry.returncode == 0, retry.stderr
    again = response_of(retry)
    assert again["outcome"] == "duplicate", again
    assert _stable(again) == _stable(_first_line(_reference(reference, job, "retry")))
    assert sam_local.stack.contents() == before

    # The malformed tick: one clear error naming the field, nothing written
    malformed = sam_local.invoke(job.function_id, EVENTS / job.package / "malformed.json")
    error = response_of(malformed)
    reference_error = _first_line(_reference(reference, job, "malformed"))
    assert (error["errorType"], error["errorMessage"]) == (
        reference_error["errorType"],
        reference_error["errorMessage"],
    )
    assert "scheduled_time" in error["errorMessage"]
    assert "\n" not in error["errorMessage"]
    assert sam_local.stack.contents() == before
    different = differences(before, reference.contents())
    assert not different, "\n".join(different)
