"""Overlap on a slow night, for every fanned-out job the template declares and every policy
(`make test`: the first job, skip and buffer): three hourly ticks arrive while the first one's
partitions still wait for their workers (the night is slow); then the workers drain the queue.
Through the template's functions on the embedded server, with the job's declared policy replaced
by the one under test.

- run-both: the three ticks run and succeed;
- skip: the second and third are recorded skipped, naming the first as still running;
- buffer: the second is buffered and, when the first is settled, started by the worker that settled
  it and succeeds; the third is skipped, naming the buffered one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from clockless.overlap import Overlap
from clockless.tick import format_scheduled_time
from clockless_tools.local.runtime import LocalLambdaRuntime
from tests.integration.work_queues import WorkQueues
from tests.jobs import fanned_out

FANNED_OUT = [(job.name, job.function_id) for job in fanned_out()]
# The policies are the kit's coordinator and worker, each job's only its parameters: the fanned-out
# job with the fewest partitions proves them in `make test`, CI's `make test-slow` every other too.
JOB_PATHS = [FANNED_OUT[0], *(pytest.param(*job, marks=pytest.mark.slow) for job in FANNED_OUT[1:])]


@pytest.fixture
def night(tables: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalLambdaRuntime, Any]:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", runtime.endpoint)
    return runtime, tables


def _ticks() -> list[str]:
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    return [format_scheduled_time(hour - timedelta(hours=h)) for h in (3, 2, 1)]


def _status(tables: Any, job: str, scheduled_time: str) -> dict[str, str]:
    item = tables.get_item(
        TableName="LedgerTable",
        Key={"job": {"S": job}, "scheduled_time": {"S": scheduled_time}},
        ConsistentRead=True,
    ).get("Item", {})
    return {name: str(next(iter(value.values()))) for name, value in item.items() if name in ("status", "reason")}


@pytest.mark.parametrize(("job", "function"), JOB_PATHS)
# run-both is what every other test of the jobs runs (their declared policy): a sweep here
@pytest.mark.parametrize(
    "policy", [pytest.param(Overlap.RUN_BOTH, marks=pytest.mark.slow), Overlap.SKIP, Overlap.BUFFER], ids=str
)
def test_each_policy_on_a_slow_night(
    night: tuple[LocalLambdaRuntime, Any], monkeypatch: pytest.MonkeyPatch, job: str, function: str, policy: Overlap
) -> None:
    runtime, tables = night
    monkeypatch.setattr(runtime.handler(function).clockless_job, "overlap", policy)  # type: ignore[attr-defined]
    work = WorkQueues.of_job(runtime, runtime.template, job)
    first, second, third = _ticks()

    outcomes = [
        runtime.invoke(function, {"job": job, "scheduled_time": t, "attempt": "1", "trigger": "schedule"})["outcome"]
        for t in (first, second, third)
    ]
    with runtime.function_environment(work.worker):
        work.drain()

    statuses = {t: _status(tables, job, t) for t in (first, second, third)}
    if policy is Overlap.RUN_BOTH:
        assert outcomes == ["executed"] * 3
        assert [s["status"] for s in statuses.values()] == ["succeeded"] * 3
    elif policy is Overlap.SKIP:
        assert outcomes == ["executed", "skipped", "skipped"]
        assert statuses[first] == {"status": "succeeded"}
        assert statuses[second] == statuses[third] == {"status": "skipped", "reason": f"overlap: {first} still running"}
    else:
        assert outcomes == ["executed", "buffered", "skipped"]
        assert statuses[first] == {"status": "succeeded"}
        # started by the worker that settled the first, and settled in turn
        assert statuses[second]["status"] == "succeeded"
        assert statuses[third] == {"status": "skipped", "reason": f"overlap: {second} already buffered"}
    assert work.bodies(work.dead_letter_queue) == []
    assert all("error" not in answer and not answer.get("batchItemFailures") for answer in work.answers)
