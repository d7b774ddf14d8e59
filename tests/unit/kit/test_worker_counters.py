"""Counters that add up after a redelivery: an item found already done stays in the index, so a
run that dies after finding it and the redelivery both find it; it is counted once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from clockless.fanout import partition
from tests.unit.kit.conftest import Aws
from tests.unit.kit.test_worker import TICK, _summary
from tests.unit.kit.toy import Context, drain, receive, seed, sqs_event, toy_job


@pytest.mark.parametrize("pages", ["1", "2"], ids=["one-page", "page-per-item"])
def test_an_already_done_item_is_counted_once_when_the_done_transaction_is_refused(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, pages: str
) -> None:
    monkeypatch.setenv("WORK_PAGE_SIZE", pages)
    seed(aws.dynamodb, 0, partitions=1, already_done=1)
    _, _, coordinator, worker = toy_job(partitions=1)
    coordinator(dict(TICK), Context())
    mark_done = partition.mark_done
    refused: list[str] = []

    def refused_once(records: Any, clock: Any, **counted: Any) -> None:
        if not refused:
            refused.append(records.partition)
            raise RuntimeError("TransactionCanceledException (injected): the done transaction refused")
        mark_done(records, clock, **counted)

    monkeypatch.setattr(partition, "mark_done", refused_once)
    (message,) = receive(aws.sqs, aws.work_queue)
    with pytest.raises(BatchProcessingError, match="All records failed"):
        worker(sqs_event([message]), Context())
    # SQS shows the message again after its visibility timeout: the failed run's lease has run out.
    with time_machine.travel(datetime.now(UTC) + timedelta(minutes=31)):
        drained = drain(aws.sqs, aws.work_queue, worker)

    assert refused == ["0"]
    assert (drained.outcomes, drained.errors) == (["ok"], [])
    assert _summary(aws) == {"found": 1, "applied": 0, "already_done": 1, "failed": 0, "partitions": 1}
