"""The AWS the trigger touches: its secret (Secrets Manager through Powertools parameters, cached),
the run ledger (consistent GetItems of the tick and the job's pause; a PutItem recording a run
through the pause), the answers given to request ids (the idempotency table)
and the jobs' functions (asynchronous Lambda invoke)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

import boto3
from aws_lambda_powertools.utilities.parameters import SecretsProvider

from clockless.errors import ClocklessError
from clockless.ledger import LedgerEntry, RunLedger
from clockless.pause import CURRENT_STATE, Pause, history_key, override_item, pause_of
from clockless.tick import format_scheduled_time
from job_trigger.logic import TriggerResponse
from job_trigger.secret import TriggerSecret


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

    def pause(self, job: str) -> Pause | None:
        response = self.client.get_item(
            TableName=self.table_name, Key=RunLedger.key(job, CURRENT_STATE), ConsistentRead=True
        )
        return pause_of(response.get("Item"))

    def record_override(self, job: str, scheduled_time: datetime, *, by: str, pause: Pause, now: datetime) -> None:
        item = override_item(
            RunLedger.key(job, history_key(now)),
            at=format_scheduled_time(now.replace(microsecond=0)),
            by=by,
            scheduled_time=format_scheduled_time(scheduled_time),
            door="the HTTP trigger",
            pause=pause,
        )
        self.client.put_item(TableName=self.table_name, Item=item)


class DynamoRequestRecords(_ServiceClient):
    """Each request id's first answer, in the idempotency table beside the jobs' records (its `id`
    prefixed so no job's key can match; `expiration` is the table's TTL attribute). An expired
    record is treated as absent, as Powertools does: DynamoDB deletes it some time later."""

    service = "dynamodb"
    PREFIX = "job-trigger#request#"

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        super().__init__(client)
        self.table_name = table_name

    def _key(self, request_id: str) -> dict[str, Any]:
        return {"id": {"S": f"{self.PREFIX}{request_id}"}}

    def first_answer(self, request_id: str, *, now: datetime) -> TriggerResponse | None:
        item = self.client.get_item(TableName=self.table_name, Key=self._key(request_id), ConsistentRead=True).get(
            "Item"
        )
        if item is None or int(item["expiration"]["N"]) <= int(now.timestamp()):
            return None
        answer = json.loads(item["data"]["S"])
        return TriggerResponse(int(answer["status_code"]), dict(answer["body"]))

    def record(self, request_id: str, response: TriggerResponse, *, now: datetime, until: datetime) -> TriggerResponse:
        answer = json.dumps({"status_code": response.status_code, "body": response.body}, sort_keys=True)
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    **self._key(request_id),
                    "expiration": {"N": str(int(until.timestamp()))},
                    "data": {"S": answer},
                },
                ConditionExpression="attribute_not_exists(id) OR expiration <= :now",
                ExpressionAttributeValues={":now": {"N": str(int(now.timestamp()))}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            # The same request id answered at the same time: its answer stands.
            return self.first_answer(request_id, now=now) or response
        return response


class JobInvokeError(ClocklessError, RuntimeError):
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
