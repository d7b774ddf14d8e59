"""The AWS the trigger touches: its secret (Secrets Manager through Powertools parameters, cached),
the run ledger (one consistent GetItem) and the jobs' functions (asynchronous Lambda invoke)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

import boto3
from aws_lambda_powertools.utilities.parameters import SecretsProvider

from clockless.ledger import LedgerEntry, RunLedger
from clockless.tick import format_scheduled_time
from job_trigger.logic import TriggerSecret


class SecretsManagerTriggerSecret:
    """The trigger secret, fetched at most once per `max_age_seconds` per execution environment.

    A rotation therefore reaches a warm function within `max_age_seconds`: keep the old value
    as "previous" at least that long.
    """

    def __init__(self, secret_id: str, *, max_age_seconds: int, provider: SecretsProvider | None = None) -> None:
        self.secret_id = secret_id
        self.max_age_seconds = max_age_seconds
        self._provider = provider
        self._lock = threading.Lock()

    def _secrets(self) -> SecretsProvider:
        with self._lock:
            if self._provider is None:
                # Made on first use, so AWS_ENDPOINT_URL_SECRETSMANAGER is read when it is set.
                self._provider = SecretsProvider()
            return self._provider

    def load(self) -> TriggerSecret:
        value = self._secrets().get(self.secret_id, max_age=self.max_age_seconds, transform="json")
        return TriggerSecret.from_value(value)


class _ServiceClient:
    """A boto3 client made on first use, so the endpoint variables are read once they are set."""

    service: ClassVar[str]

    def __init__(self, client: Any | None = None) -> None:
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = boto3.client(self.service)  # type: ignore[call-overload]
        return self._client


class DynamoTickLedger(_ServiceClient):
    """Reads one tick's ledger record; the kit writes them."""

    service = "dynamodb"

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        super().__init__(client)
        self.table_name = table_name

    def entry(self, job: str, scheduled_time: datetime) -> LedgerEntry | None:
        response = self.client.get_item(
            TableName=self.table_name,
            Key=RunLedger.key(job, format_scheduled_time(scheduled_time)),
            # A tick that finished a moment ago must read as finished, not be run again.
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if item is None else LedgerEntry.from_item(item)


class JobInvokeError(RuntimeError):
    """Lambda did not queue the tick; the caller gets a 5xx and may press again."""


class LambdaJobInvoker(_ServiceClient):
    service = "lambda"

    def invoke_async(self, function_arn: str, payload: Mapping[str, str]) -> None:
        response = self.client.invoke(
            FunctionName=function_arn,
            InvocationType="Event",
            Payload=json.dumps(dict(payload)).encode("utf-8"),
        )
        # 202 means Lambda queued the event; its async retries and the function's OnFailure
        # destination take over from there, exactly as for a scheduled delivery.
        if response.get("StatusCode") != 202:
            raise JobInvokeError(f"Lambda answered {response.get('StatusCode')} to an asynchronous invoke")
