"""The kit's fan-out against in-process moto: tables from template.yaml's ledger, the toy's
tables, and the work queue with its dead-letter queue."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clockless_tools.local.moto_expressions import expressions_evaluated_cheaply
from clockless_tools.local.moto_serializer import attribute_values_read_directly
from tests.unit.kit.toy import create_tables, kit_environment


@dataclass
class Aws:
    dynamodb: Any
    sqs: Any
    work_queue: str
    dead_letter_queue: str


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    # moto's expressions and answers made cheap, as on the integration tests' servers.
    with mock_aws(), expressions_evaluated_cheaply(), attribute_values_read_directly():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        create_tables(dynamodb)
        dlq = sqs.create_queue(QueueName="toy-work-dlq")["QueueUrl"]
        work = sqs.create_queue(QueueName="toy-work", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
        # One lane: in-process moto is not thread-safe (concurrent transactions race in its
        # table copies). The lanes run against the embedded server in tests/integration.
        with kit_environment(monkeypatch, work, dlq, WORK_CONCURRENCY="1"):
            yield Aws(dynamodb, sqs, work, dlq)
