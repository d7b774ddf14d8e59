"""A DynamoDB store for Powertools' idempotency, built the way its documentation says to bring
one's own (a `BasePersistenceLayer` with its four hooks), with a tick's three bookkeeping writes
each made in one transaction with its ledger entry: the claim (record in progress + ledger started), the
completion (record completed + ledger succeeded) and the release (record deleted + ledger failed).
A first delivery pays two requests for its bookkeeping, a duplicate one.

Every request can be applied with its answer lost and then resent by botocore, so each write
recognises its own earlier send: DynamoDB answers a resent `TransactWriteItems` from its
`ClientRequestToken` (botocore fills it in), and the claim also carries this delivery's claim id,
which its conditions accept as "mine". See docs/tick-contract.md.

A throttle is never a failure here either: each of the three transactions is resent after
backoff while the delivery's budget lasts (clockless.throttle), with the same
`ClientRequestToken`, so a resend of one that was applied is answered without applying it twice.
"""

from __future__ import annotations

import enum
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import boto3
from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord

from clockless.config import ConfigurationError
from clockless.errors import ClocklessError
from clockless.ledger import STATUS_SUCCEEDED, RunLedger
from clockless.throttle import Budget, ThrottleRetryingClient, cancellation_reasons, client_request_token, remaining_ms
from clockless.tick import Tick

# The idempotency record's attributes: Powertools' default names, so its documentation's table
# reads as ours (template.yaml's IdempotencyTable keys on `id`).
KEY_ATTR: Final = "id"
EXPIRY_ATTR: Final = "expiration"
IN_PROGRESS_EXPIRY_ATTR: Final = "in_progress_expiration"
STATUS_ATTR: Final = "status"
DATA_ATTR: Final = "data"
CLAIM_ID_ATTR: Final = "claim_id"
REQUEST_ID_ATTR: Final = "request_id"
_INPROGRESS: Final = STATUS_CONSTANTS["INPROGRESS"]
_COMPLETED: Final = STATUS_CONSTANTS["COMPLETED"]
# A claim takes the tick's record when Powertools would run the function for it: no record, one
# past its expiry (a DataRecord whose status reads EXPIRED), or one in progress whose attempt's
# time is up (Powertools calls a refusal on that one an inconsistent state). Those three are
# tests/unit/test_upgrade_canaries.py's table, checked against the pinned Powertools. And this
# store's own: an in-progress record this delivery wrote, or that of the attempt Lambda retries.
CLAIMABLE: Final = (
    "attribute_not_exists(#id) OR #expiry < :now"
    " OR (#status = :inprogress AND attribute_exists(#in_progress_expiry)"
    " AND #in_progress_expiry < :now_in_millis)"
    " OR (#status = :inprogress AND {mine})"
)
# A throttled claim may be waited out for half of what the attempt has left (the other half is
# the job's); the completion and the release until this close to the attempt's end.
CLAIM_SHARE: Final = 0.5
LAST_WRITE_MARGIN_SECONDS: Final = 3.0


class LedgerEntryMoved(ClocklessError, RuntimeError):
    """The tick's ledger entry changed between two claims of one delivery (another delivery
    claimed it in between): the delivery fails and Lambda's retry claims afresh."""


class UnexpectedRecord(ClocklessError, RuntimeError):
    """Powertools asked to store a record clockless never stores (its hooks' contract moved)."""


class Phase(enum.Enum):
    CLAIMING = "claiming"
    RUNNING = "running"
    COMPLETING = "completing"
    DONE = "done"


class Release(enum.Enum):
    """What a release found."""

    RELEASED = "released"  # the claim was this delivery's and is gone; the ledger says failed
    COMPLETED = "completed"  # the completion had been applied after all (its answer was lost)
    NOT_HELD = "not held"  # the claim is not this delivery's (never applied, or taken over)


@dataclass
class Delivery:
    """One delivery of a tick, as the persistence layer sees it."""

    tick: Tick
    # Lambda keeps the request id across its async retries of one event: a retry recognises the
    # claim of the attempt it replaces, which ended (failed or timed out) before Lambda retried.
    request_id: str | None = None
    claim_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    phase: Phase = Phase.CLAIMING
    # earlier deliveries that claimed this tick (and may have done part of its work)
    earlier_attempts: int = 0
    rerun: bool = False
    started: float = field(default_factory=time.monotonic)
    error: BaseException | None = None
    result: dict[str, Any] | None = None
    # the claim's primary key, once a claim was sent
    key: dict[str, Any] | None = None
    # what releasing the claim found, once it was released
    released: Release | None = None
    # a fan-out coordinator's partitions: its claim records them, its completion leaves the status
    partitions_total: int | None = None
    # how long throttles may be waited out (None: as long as a Lambda attempt can last)
    budget: Budget | None = None
    # the request id on the record that held this tick when this delivery's claim was refused
    holder_request_id: str | None = None
    # items of the tick that failed alone (clockless.items), for the ItemsFailed metric
    items_failed: int = 0

    @property
    def retries_its_holder(self) -> bool:
        """Lambda's retry of the attempt that holds the tick: Lambda retries an async event only
        after the attempt failed, under the same request id, so that attempt died."""
        return self.request_id is not None and self.holder_request_id == self.request_id

    def elapsed_ms(self) -> int:
        return round((time.monotonic() - self.started) * 1000)


class LedgeredPersistenceLayer:
    """The idempotency table, the run ledger and the client they are written with, shared by the
    deliveries of one environment. Each delivery hands Powertools its own persistence layer
    (`records`), so the hooks Powertools calls know whose writes they make."""

    def __init__(
        self, *, table_name: str, ledger_table_name: str, ledger_retention_seconds: int, client: Any | None = None
    ) -> None:
        self.table_name = table_name
        # Untyped on purpose: requests are built as plain dicts, and exceptions are read by name.
        self.dynamodb: Any = client if client is not None else boto3.session.Session().client("dynamodb")
        self.ledger = RunLedger(ledger_table_name, self.dynamodb, retention_seconds=ledger_retention_seconds)

    def records(self, delivery: Delivery) -> TickRecords:
        """Powertools' persistence layer for this one delivery."""
        return TickRecords(self, delivery)

    def release(self, delivery: Delivery, error: str) -> Release:
        """Give up this delivery's claim so a retry runs the tick, and record the attempt failed.

        Only this delivery's in-progress record is deleted: if the completion was applied after
        all (its answer lost), the release says so instead of undoing it.
        """
        if delivery.key is None:
            return Release.NOT_HELD  # nothing was claimed
        delete: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": delivery.key,
            "ConditionExpression": "#claim_id = :claim_id AND #status = :inprogress",
            "ExpressionAttributeNames": {"#claim_id": CLAIM_ID_ATTR, "#status": STATUS_ATTR},
            "ExpressionAttributeValues": {":claim_id": {"S": delivery.claim_id}, ":inprogress": {"S": _INPROGRESS}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if delivery.rerun:
            # The ledger keeps the first success; only the claim goes.
            try:
                _retrying(self.dynamodb, delivery).delete_item(**delete)
            except self.dynamodb.exceptions.ConditionalCheckFailedException as failed:
                return _not_released(failed.response.get("Item"))
            return Release.RELEASED
        failed_update = self.ledger.failed_update(
            delivery.tick,
            delivery.claim_id,
            error,
            duration_ms=delivery.elapsed_ms(),
            failures=getattr(delivery.error, "failures", ()),
        )
        try:
            _transact(self.dynamodb, delivery, [{"Delete": delete}, {"Update": failed_update}])
        except self.dynamodb.exceptions.TransactionCanceledException as cancelled:
            claim_reason = cancellation_reasons(cancelled, 1)[0]
            if claim_reason.get("Code") == "ConditionalCheckFailed":
                return _not_released(claim_reason.get("Item"))
            raise
        return Release.RELEASED


class TickRecords(BasePersistenceLayer):
    """One delivery's idempotency records: a persistent store of clockless's own, made the way
    Powertools documents (Idempotency, "Bring your own persistent store": inherit
    `BasePersistenceLayer`, implement `_get_record`, `_put_record`, `_update_record` and
    `_delete_record`). Each write is one transaction with the tick's ledger entry."""

    def __init__(self, store: LedgeredPersistenceLayer, delivery: Delivery) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Powertools leaves it unannotated
        self.store = store
        self.delivery = delivery
        self.dynamodb: Any = store.dynamodb

    # ---------------------------------------------------------------------------------- read
    def _get_record(self, idempotency_key: str) -> DataRecord:
        """Powertools reads the record only when a refused claim did not return it."""
        response = self.dynamodb.get_item(
            TableName=self.store.table_name, Key=_key(idempotency_key), ConsistentRead=True
        )
        if "Item" not in response:
            raise IdempotencyItemNotFoundError
        return _data_record(response["Item"])

    # ------------------------------------------------------------------------------------ claim
    def _put_record(self, data_record: DataRecord) -> None:
        delivery = self.delivery
        delivery.key = _key(data_record.idempotency_key)
        claim = self._claim(data_record)
        cancelled = self._claim_with_ledger(claim, first=True)
        if cancelled is None:
            return
        # The ledger already has an entry for this tick: say why before claiming again.
        if _text(cancelled, CLAIM_ID_ATTR) == delivery.claim_id:
            # This very claim, resent by botocore and not recognised as a resend: it is ours.
            delivery.earlier_attempts = max(0, _number(cancelled, "attempts") - 1)
            return
        if _text(cancelled, "status") == STATUS_SUCCEEDED:
            # The tick succeeded before and its idempotency record expired: a re-run, which the
            # ledger notes beside the first outcome.
            delivery.rerun = True
            try:
                _retrying(self.dynamodb, delivery, claim=True).put_item(**claim)
            except self.dynamodb.exceptions.ConditionalCheckFailedException as error:
                raise self._already_exists(error.response.get("Item")) from error
            return
        delivery.earlier_attempts = _number(cancelled, "attempts")
        again = self._claim_with_ledger(claim, first=False)
        if again is not None and _text(again, CLAIM_ID_ATTR) != delivery.claim_id:
            raise LedgerEntryMoved(f"the run ledger entry of {delivery.tick.key} changed while it was claimed; retry")

    def _claim(self, data_record: DataRecord) -> dict[str, Any]:
        delivery = self.delivery
        item: dict[str, Any] = {
            **_key(data_record.idempotency_key),
            EXPIRY_ATTR: {"N": str(data_record.expiry_timestamp)},
            STATUS_ATTR: {"S": data_record.status},
            CLAIM_ID_ATTR: {"S": delivery.claim_id},
        }
        if data_record.in_progress_expiry_timestamp is not None:
            item[IN_PROGRESS_EXPIRY_ATTR] = {"N": str(data_record.in_progress_expiry_timestamp)}
        names = {
            "#id": KEY_ATTR,
            "#expiry": EXPIRY_ATTR,
            "#in_progress_expiry": IN_PROGRESS_EXPIRY_ATTR,
            "#status": STATUS_ATTR,
            "#claim_id": CLAIM_ID_ATTR,
        }
        now = time.time()
        values: dict[str, Any] = {
            ":now": {"N": str(int(now))},
            ":now_in_millis": {"N": str(int(now * 1000))},
            ":inprogress": {"S": _INPROGRESS},
            ":claim_id": {"S": delivery.claim_id},
        }
        mine = "#claim_id = :claim_id"
        if delivery.request_id:
            item[REQUEST_ID_ATTR] = {"S": delivery.request_id}
            names["#request_id"] = REQUEST_ID_ATTR
            values[":request_id"] = {"S": delivery.request_id}
            mine = f"({mine} OR #request_id = :request_id)"
        return {
            "TableName": self.store.table_name,
            "Item": item,
            "ConditionExpression": CLAIMABLE.format(mine=mine),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _claim_with_ledger(self, claim: dict[str, Any], *, first: bool) -> dict[str, Any] | None:
        """Claim and start the ledger entry in one transaction. None when done; the ledger entry
        when only the ledger's condition failed. A claim held elsewhere raises Powertools' error."""
        delivery = self.delivery
        transaction = [
            {"Put": claim},
            {
                "Update": self.store.ledger.started_update(
                    delivery.tick, delivery.claim_id, first=first, partitions_total=delivery.partitions_total
                )
            },
        ]
        try:
            _transact(self.dynamodb, delivery, transaction, claim=True)
        except self.dynamodb.exceptions.TransactionCanceledException as error:
            claim_reason, ledger_reason = cancellation_reasons(error, 2)[:2]
            if claim_reason.get("Code") == "ConditionalCheckFailed":
                raise self._already_exists(claim_reason.get("Item")) from error
            if ledger_reason.get("Code") == "ConditionalCheckFailed" and "Item" in ledger_reason:
                return dict(ledger_reason["Item"])
            raise  # a conflict with a concurrent write, or worse: loud, Lambda retries
        return None

    def _already_exists(self, item: Mapping[str, Any] | None) -> IdempotencyItemAlreadyExistsError:
        """The refusal Powertools reads the holder's record from (it reads it itself without one)."""
        if not item:
            return IdempotencyItemAlreadyExistsError()
        self.delivery.holder_request_id = _text(item, REQUEST_ID_ATTR)
        return IdempotencyItemAlreadyExistsError(old_data_record=_data_record(item))

    # ------------------------------------------------------------------------------- completion
    def _update_record(self, data_record: DataRecord) -> None:
        """Powertools saves the result (the only update it makes): the completed record and the
        ledger's outcome, in one transaction."""
        if self.payload_validation_enabled:
            raise ConfigurationError("payload validation is not used by clockless jobs; no hash would be stored")
        if data_record.status != _COMPLETED or data_record.response_data is None:
            raise UnexpectedRecord(
                f"Powertools saved a {data_record.status} record without a result for "
                f"{data_record.idempotency_key}; clockless stores only completions"
            )
        delivery = self.delivery
        delivery.phase = Phase.COMPLETING
        result = json.loads(data_record.response_data)
        completion: dict[str, Any] = {
            "TableName": self.store.table_name,
            "Key": _key(data_record.idempotency_key),
            "UpdateExpression": "SET #response_data = :response_data, #expiry = :expiry, #status = :status",
            "ExpressionAttributeNames": {"#expiry": EXPIRY_ATTR, "#response_data": DATA_ATTR, "#status": STATUS_ATTR},
            "ExpressionAttributeValues": {
                ":expiry": {"N": str(data_record.expiry_timestamp)},
                ":response_data": {"S": data_record.response_data},
                ":status": {"S": data_record.status},
            },
        }
        ledger = self.store.ledger
        ledger_update = (
            ledger.succeeded_update(result) if delivery.partitions_total is None else ledger.fanned_out_update(result)
        )
        transaction: list[Any] = [{"Update": completion}, {"Update": ledger_update}]
        # A resend after a lost answer carries the same ClientRequestToken: DynamoDB applies it once.
        _transact(self.dynamodb, delivery, transaction)
        delivery.phase = Phase.DONE

    # ---------------------------------------------------------------------------------- release
    def _delete_record(self, data_record: DataRecord) -> None:
        """Powertools releases the claim when the job raised: release it as this delivery's."""
        delivery = self.delivery
        error = delivery.error
        described = "the job failed" if error is None else f"{type(error).__name__}: {error}"
        delivery.released = self.store.release(delivery, described)


def _key(idempotency_key: str) -> dict[str, Any]:
    """The record's primary key: the idempotency table's hash key only (template.yaml)."""
    return {KEY_ATTR: {"S": idempotency_key}}


def _data_record(item: Mapping[str, Any]) -> DataRecord:
    """A stored record as Powertools reads one: what decides a duplicate's answer."""
    in_progress_expiry = _text(item, IN_PROGRESS_EXPIRY_ATTR)
    return DataRecord(
        idempotency_key=str(_text(item, KEY_ATTR)),
        status=str(_text(item, STATUS_ATTR)),
        expiry_timestamp=_number(item, EXPIRY_ATTR),
        in_progress_expiry_timestamp=None if in_progress_expiry is None else int(in_progress_expiry),
        response_data=_text(item, DATA_ATTR) or "",
    )


def _transact(dynamodb: Any, delivery: Delivery, transaction: list[Any], *, claim: bool = False) -> None:
    """One bookkeeping transaction, throttles waited out within the delivery's budget (the
    claim's within its share), with a token that makes a resend of an applied one a no-op."""
    _retrying(dynamodb, delivery, claim=claim).transact_write_items(
        TransactItems=transaction, ClientRequestToken=client_request_token(transaction)
    )


def _retrying(dynamodb: Any, delivery: Delivery, *, claim: bool = False) -> Any:
    """The client, waiting out throttles for as long as this write may."""
    budget = delivery.budget if delivery.budget is not None else Budget(None, 0.0)
    margin = LAST_WRITE_MARGIN_SECONDS
    if claim:
        margin = max(margin, remaining_ms(budget.context) / 1000 * CLAIM_SHARE)
    return ThrottleRetryingClient(dynamodb, budget.with_margin(margin))


def _not_released(item: Mapping[str, Any] | None) -> Release:
    # Completed, by this delivery (its completion's answer was lost) or by one that took over:
    # either way the tick's effect is taken and recorded.
    if item and _text(item, STATUS_ATTR) == _COMPLETED:
        return Release.COMPLETED
    return Release.NOT_HELD


def _text(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value.get("S", value.get("N")))


def _number(item: Mapping[str, Any], name: str) -> int:
    return int(_text(item, name) or 0)
