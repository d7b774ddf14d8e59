"""A duplicate delivery of any scheduled job costs exactly one DynamoDB request: the kit's claim,
refused because the tick is done. Parametrized over every scheduled function of template.yaml, so
a new job is covered the day it is added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clockless_tools.bench import requests as expected
from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.loader import DEFAULT_TEMPLATE
from clockless_tools.template.model import Template
from tests.integration.conftest import delivery
from tests.integration.work_queues import WorkQueues

SCHEDULED = Template.load(DEFAULT_TEMPLATE).scheduled_functions


@pytest.mark.parametrize("function", sorted(SCHEDULED))
def test_duplicate_delivery_costs_exactly_one_dynamodb_request(
    function: str, tables: Any, function_env: Any, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the tick delivered once (a fanned-out job's coordinator: its partitions sent)
    function_env(function)
    work = _work_queues(runtime, function, monkeypatch)
    sample = f"{Path(SCHEDULED[function].code_uri).name}/tick.json"
    runtime.call(function, delivery(sample))

    # When the scheduler delivers it again
    with count_requests() as requests:
        result = runtime.call(function, delivery(sample, attempt=2))

    # Then the kit's claim is the only request (its transaction, cancelled by its condition,
    # returns the completed record), and it says so
    assert result["outcome"] == "duplicate"
    # (a job with a local time adds its zones' look at its latest successes, one Query)
    local_time = runtime.environment(function).get("LOCAL_TIME", "none") != "none"
    assert dict(requests.operations) == expected.duplicate_delivery() | (
        expected.local_tick_watch() if local_time else {}
    )
    if work is not None:
        work.delete()


def _work_queues(runtime: LocalLambdaRuntime, function: str, monkeypatch: pytest.MonkeyPatch) -> WorkQueues | None:
    """The work queue of a job that fans out, on the embedded server."""
    template = runtime.template
    if not template.workers_of(function):
        return None
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", runtime.endpoint)
    (schedule, *_) = SCHEDULED[function].schedules
    return WorkQueues.of_job(runtime, template, schedule.job)
