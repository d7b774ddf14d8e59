"""Upgrade canaries: one test per private internal of a dependency that clockless leans on.

Each fails with the dependency's name and version, what changed, and which of our code relies on
it, so a lock bump (`make lock`) that moves one is caught here rather than by a strange failure
elsewhere (or by nothing at all: the moto transactions patch would quietly stop working).
"""

from __future__ import annotations

import copy
import importlib.metadata
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, Final

import boto3
import pytest
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer, IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyInconsistentStateError,
    IdempotencyItemAlreadyExistsError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord
from botocore.awsrequest import AWSResponse
from botocore.endpoint import Endpoint
from moto.dynamodb.models.table import Table

from clockless.observability import LOG_TIME_FORMAT
from clockless_tools.local.moto_transactions import stock_transactions


def _version(distribution: str) -> str:
    return f"{distribution} {importlib.metadata.version(distribution)}"


# -------------------------------------------------------------------- aws-lambda-powertools


def test_powertools_own_formatter_still_reads_a_second_late_past_the_half_second() -> None:
    """clockless.observability.ExactTimeFormatter wraps this defect; once it is fixed upstream the
    wrapper can go (docs/observability.md, "Library defects")."""
    formatter = LambdaPowertoolsFormatter(datefmt=LOG_TIME_FORMAT, use_datetime_directive=True, utc=True)
    record = logging.LogRecord("clockless", logging.INFO, __file__, 1, "tick executed", None, None)
    record.created = datetime(2026, 12, 6, 12, 0, 0, 750_000, tzinfo=UTC).timestamp()
    record.msecs = 750.0

    assert formatter.formatTime(record) == "2026-12-06T12:00:01.750Z", (
        f"{_version('aws-lambda-powertools')} formats a line logged at 12:00:00.750 right: "
        "clockless.observability.ExactTimeFormatter is no longer needed"
    )


# What clockless.persistence.TickRecords (a store built on Powertools' documented hooks) relies on
# Powertools for: which stored records it runs the function for, and what each hook is handed.
CLAIM_RELIANCE = (
    "clockless.persistence.CLAIMABLE takes a tick's record exactly when Powertools would run the function "
    "for it (tests/integration/test_kit_idempotency.py holds the claim to the same table)"
)


def stored_records(now: float) -> dict[str, dict[str, Any]]:
    """Records a claim may find, as DataRecord fields, and whether Powertools runs the function
    for each (`runs`): the table clockless.persistence.CLAIMABLE is written from."""
    seconds, millis = int(now), int(now * 1000)
    completed = {"status": "COMPLETED", "response_data": '{"outcome": "executed"}'}
    return {
        "completed": {**completed, "expiry_timestamp": seconds + 3600, "runs": False},
        "completed, expired": {**completed, "expiry_timestamp": seconds - 10, "runs": True},
        "in progress": {
            "status": "INPROGRESS",
            "expiry_timestamp": seconds + 3600,
            "in_progress_expiry_timestamp": millis + 60_000,
            "runs": False,
        },
        "in progress, its attempt timed out": {
            "status": "INPROGRESS",
            "expiry_timestamp": seconds + 3600,
            "in_progress_expiry_timestamp": millis - 1_000,
            "runs": True,
        },
        "in progress, no attempt deadline": {"status": "INPROGRESS", "expiry_timestamp": seconds + 3600, "runs": False},
    }


LAMBDA_CONTEXT: Final = SimpleNamespace(get_remaining_time_in_millis=lambda: 30_000)


class Refusing(BasePersistenceLayer):
    """A store that refuses every claim, handing Powertools the record it found."""

    def __init__(self, found: DataRecord) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.found = found

    def _get_record(self, idempotency_key: str) -> DataRecord:
        return self.found

    def _put_record(self, data_record: DataRecord) -> None:
        raise IdempotencyItemAlreadyExistsError(old_data_record=self.found)

    def _update_record(self, data_record: DataRecord) -> None:
        raise AssertionError("a refused claim runs nothing")

    def _delete_record(self, data_record: DataRecord) -> None:
        raise AssertionError("a refused claim runs nothing")


@pytest.mark.parametrize("shape", list(stored_records(0)))
def test_powertools_runs_the_function_again_for_exactly_the_records_our_claim_takes(shape: str) -> None:
    fields = stored_records(time.time())[shape]
    runs = fields.pop("runs")
    found = DataRecord("clockless#j#abc", **fields)
    config = IdempotencyConfig(event_key_jmespath="[job, scheduled_time]")
    config.register_lambda_context(LAMBDA_CONTEXT)  # type: ignore[arg-type]
    once = idempotent_function(
        lambda **_: {"outcome": "executed"},
        data_keyword_argument="tick",
        persistence_store=Refusing(found),
        config=config,
    )

    try:
        answer = once(tick={"job": "j", "scheduled_time": "2026-11-29T14:00:00Z"})
    except IdempotencyInconsistentStateError:
        answer = "runs"  # Powertools expected the store to have taken this record
    except IdempotencyAlreadyInProgressError:
        answer = "held"
    else:
        answer = "held" if answer == {"outcome": "executed"} else f"answered {answer!r}"

    assert answer == ("runs" if runs else "held"), (
        f"{_version('aws-lambda-powertools')}: for a stored record {shape!r} Powertools now {answer}. " + CLAIM_RELIANCE
    )


def test_powertools_hands_each_hook_the_record_our_store_writes() -> None:
    class Recording(Refusing):
        def _put_record(self, data_record: DataRecord) -> None:
            seen.append(("put", data_record))

        def _update_record(self, data_record: DataRecord) -> None:
            seen.append(("update", data_record))

        def _delete_record(self, data_record: DataRecord) -> None:
            seen.append(("delete", data_record))

    seen: list[tuple[str, DataRecord]] = []
    config = IdempotencyConfig(event_key_jmespath="[job, scheduled_time]")
    config.register_lambda_context(LAMBDA_CONTEXT)  # type: ignore[arg-type]
    store = Recording(DataRecord("unused"))

    runs: list[int] = []

    def job(**_: Any) -> dict[str, bool]:
        runs.append(1)
        if len(runs) == 2:
            raise RuntimeError("the job failed")
        return {"ok": True}

    once = idempotent_function(job, data_keyword_argument="tick", persistence_store=store, config=config)
    tick = {"job": "j", "scheduled_time": "2026-11-29T14:00:00Z"}
    once(tick=tick)
    with pytest.raises(RuntimeError):
        once(tick=tick)

    changed = f"{_version('aws-lambda-powertools')}: the hooks Powertools calls changed"
    assert [hook for hook, _ in seen] == ["put", "update", "put", "delete"], (
        f"{changed} ({[hook for hook, _ in seen]}); clockless.persistence.TickRecords claims in _put_record, "
        "completes in _update_record and releases in _delete_record"
    )
    put, update = seen[0][1], seen[1][1]
    assert put.status == STATUS_CONSTANTS["INPROGRESS"], f"{changed}: the claim's record is {put.status}"
    assert put.in_progress_expiry_timestamp is not None, f"{changed}: the claim's record has no attempt deadline"
    assert update.status == STATUS_CONSTANTS["COMPLETED"], f"{changed}: the completion's record is {update.status}"
    assert update.response_data == '{"ok": true}', (
        f"{changed}: the completion's record holds {update.response_data!r}; "
        "TickRecords stores only completions with a result"
    )


# -------------------------------------------------------------------- botocore


def test_every_botocore_request_passes_through_endpoint_send(monkeypatch: pytest.MonkeyPatch) -> None:
    """clockless_tools.local.botocore_hooks counts requests and injects faults by wrapping Endpoint._send."""
    from clockless_tools.local.botocore_hooks import count_requests

    sent: list[Any] = []

    class Body:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b'{"TableNames": []}'

    def answer(self: Endpoint, request: Any) -> AWSResponse:
        sent.append(request)
        return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"}, Body())  # type: ignore[arg-type]

    monkeypatch.setattr(Endpoint, "_send", answer)
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
    with count_requests() as counter:
        try:
            response = client.list_tables()
        except Exception as error:
            if sent:
                raise
            pytest.fail(
                f"{_version('botocore')}: a client request no longer goes through Endpoint._send(self, request) "
                f"({type(error).__name__}: {error}); "
                "clockless_tools.local.botocore_hooks counts requests and injects faults there"
            )

    assert response["TableNames"] == []
    assert counter.operations == {"ListTables": 1}, (
        f"{_version('botocore')}: Endpoint._send saw {dict(counter.operations)!r}; the X-Amz-Target header "
        "clockless_tools.local.botocore_hooks reads the operation from changed"
    )


def test_every_botocore_session_takes_its_data_loader_from_register_data_loader() -> None:
    """clockless_tools.local.data_loader gives every session of the test process (and of each of the
    simulator's replays) one data loader by replacing Session._register_data_loader (tests/conftest.py
    installs it): each session would otherwise parse the service models and endpoints.json again."""
    from botocore.session import Session

    from clockless_tools.local.data_loader import data_loader

    sessions = [boto3.session.Session()._session, Session(), Session()]  # boto3's and botocore's own

    loaders = {id(data_loader(session)) for session in sessions}
    assert len(loaders) == 1, (
        f"{_version('botocore')}: sessions no longer get their data loader from Session._register_data_loader "
        f"({len(loaders)} loaders for {len(sessions)} sessions); clockless_tools.local.data_loader shares it "
        "through that method, and every client the tests and the replays make would parse the service models again"
    )
    clients = [session.create_client("dynamodb", region_name="us-east-1") for session in sessions]
    assert {client.meta.service_model.service_name for client in clients} == {"dynamodb"}


# -------------------------------------------------------------------- moto


def test_moto_rolls_a_transaction_back_from_deep_copies_of_its_tables() -> None:
    """clockless_tools.local.moto_transactions (make run, make bench) replaces moto.dynamodb.models.copy (and
    transact_write_items) because moto deep-copies every table a transaction names."""
    # This worker's embedded server may have the patch installed: the canary looks at moto's own.
    with stock_transactions():
        copied = _tables_moto_copies_in_a_transaction()

    assert Table.__name__ in copied, (
        f"{_version('moto')}: transact_write_items no longer deep-copies the tables it names through "
        f"moto.dynamodb.models.copy (copied: {copied!r}). {RELIANCE}"
    )


RELIANCE = (
    "clockless_tools.local.moto_transactions.transactions_snapshot_touched_items replaces "
    "moto.dynamodb.models.copy to skip that copy; it would now do nothing or break transactions"
)


def _tables_moto_copies_in_a_transaction() -> list[str]:
    from moto import mock_aws
    from moto.dynamodb import models

    assert getattr(models, "copy", None) is copy, (
        f"{_version('moto')}: moto.dynamodb.models no longer imports copy. {RELIANCE}"
    )
    copied: list[str] = []

    class Watching:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            copied.append(type(value).__name__)
            return copy.deepcopy(value, memo)

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        setattr(models, "copy", Watching)  # noqa: B010 - the module moto copies tables with
        try:
            client.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": {"id": {"S": "a"}}}}])
        finally:
            setattr(models, "copy", copy)  # noqa: B010
    return copied


def test_moto_keeps_each_table_and_queue_as_one_object_its_deletes_remove() -> None:
    """tests/moto_backends.py (the integration tests' `tables` fixture) installs copies of empty
    tables and queues in moto's backends and removes them, instead of CreateTable, CreateQueue,
    DeleteTable and DeleteQueue: that holds while those requests only add and remove one object in
    the backends' `tables` and `queues`, and a copied queue (its lock new) answers as a created one.
    The fault-model tests put copies of seeded tables back the same way: a copy keeps its items."""
    from moto import mock_aws

    from tests.moto_backends import copied, dynamodb_backend, sqs_backend

    reliance = (
        f"{_version('moto')}: tests/moto_backends.py (the `tables` fixture, the fault worlds) would no longer"
        " give fresh or seeded tables"
    )
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        table, queue = dynamodb_backend().tables.get("t"), sqs_backend().queues.get("q")
        assert isinstance(table, Table), f"CreateTable no longer leaves a Table in the backend's tables. {reliance}"
        assert queue is not None, f"CreateQueue no longer leaves the queue in the backend's queues. {reliance}"
        fresh_table, fresh_queue = copied({"t": table})["t"], copied({"q": queue})["q"]

        dynamodb.delete_table(TableName="t")
        sqs.delete_queue(QueueUrl=url)
        assert "t" not in dynamodb_backend().tables, f"DeleteTable does more than remove the object. {reliance}"
        assert "q" not in sqs_backend().queues, f"DeleteQueue does more than remove the object. {reliance}"
        dynamodb_backend().tables["t"] = fresh_table
        sqs_backend().queues["q"] = fresh_queue
        dynamodb.put_item(TableName="t", Item={"id": {"S": "a"}})
        sqs.send_message(QueueUrl=url, MessageBody="m")
        received = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
        item = dynamodb.get_item(TableName="t", Key={"id": {"S": "a"}}).get("Item")
        # A seeded table copied (the fault-model tests' `FreshBackends.of`) comes back as it was.
        seeded = copied({"t": dynamodb_backend().tables["t"]})["t"]
        dynamodb.delete_item(TableName="t", Key={"id": {"S": "a"}})
        dynamodb_backend().tables["t"] = seeded
        restored = dynamodb.scan(TableName="t")["Items"]

    assert item == {"id": {"S": "a"}}, f"a copied table does not answer as a created one. {reliance}"
    assert [m["Body"] for m in received] == ["m"], f"a copied queue does not answer as a created one. {reliance}"
    assert restored == [{"id": {"S": "a"}}], f"a copied seeded table does not answer as it was. {reliance}"
