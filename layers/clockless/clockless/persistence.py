"""Powertools' DynamoDB persistence layer, with a tick's three bookkeeping writes each made in one
transaction with its ledger entry: the claim (record in progress + ledger started), the
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

import contextlib
import enum
import json
import time
import uuid
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemAlreadyExistsError
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord

from clockless.ledger import STATUS_SUCCEEDED, RunLedger
from clockless.throttle import Budget, ThrottleRetryingClient, cancellation_reasons, client_request_token, remaining_ms
from clockless.tick import Tick

CLAIM_ID_ATTR: Final = "claim_id"
REQUEST_ID_ATTR: Final = "request_id"
_INPROGRESS: Final = STATUS_CONSTANTS["INPROGRESS"]
_COMPLETED: Final = STATUS_CONSTANTS["COMPLETED"]
# A throttled claim may be waited out for half of what the attempt has left (the other half is
# the job's); the completion and the release until this close to the attempt's end.
CLAIM_SHARE: Final = 0.5
LAST_WRITE_MARGIN_SECONDS: Final = 3.0


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


_current: ContextVar[Delivery | None] = ContextVar("clockless_delivery", default=None)


class LedgeredPersistenceLayer(DynamoDBPersistenceLayer):
    def __init__(self, *, table_name: str, ledger_table_name: str, ledger_retention_seconds: int) -> None:
        super().__init__(table_name=table_name)
        # Untyped on purpose: requests are built as plain dicts, and exceptions are read by name.
        self.dynamodb: Any = self.client
        self.ledger = RunLedger(ledger_table_name, self.client, retention_seconds=ledger_retention_seconds)

    @contextlib.contextmanager
    def delivering(self, delivery: Delivery) -> Iterator[Delivery]:
        """Writes made inside belong to `delivery` (per thread, so concurrent deliveries keep apart)."""
        reset = _current.set(delivery)
        try:
            yield delivery
        finally:
            _current.reset(reset)

    def _transact(self, delivery: Delivery, transaction: list[Any], *, claim: bool = False) -> None:
        """One bookkeeping transaction, throttles waited out within the delivery's budget (the
        claim's within its share), with a token that makes a resend of an applied one a no-op."""
        self._retrying(delivery, claim=claim).transact_write_items(
            TransactItems=transaction, ClientRequestToken=client_request_token(transaction)
        )

    def _retrying(self, delivery: Delivery, *, claim: bool = False) -> Any:
        """The client, waiting out throttles for as long as this write may."""
        budget = delivery.budget if delivery.budget is not None else Budget(None, 0.0)
        margin = LAST_WRITE_MARGIN_SECONDS
        if claim:
            margin = max(margin, remaining_ms(budget.context) / 1000 * CLAIM_SHARE)
        return ThrottleRetryingClient(self.dynamodb, budget.with_margin(margin))

    @staticmethod
    def _delivery() -> Delivery:
        delivery = _current.get()
        if delivery is None:
            raise RuntimeError("clockless writes idempotency records only inside ScheduledJob.deliver")
        return delivery

    # ------------------------------------------------------------------------------------ claim
    def _put_record(self, data_record: DataRecord) -> None:
        delivery = self._delivery()
        delivery.key = self._get_key(data_record.idempotency_key)
        claim = self._claim(data_record, delivery)
        cancelled = self._claim_with_ledger(claim, delivery, first=True)
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
                self._retrying(delivery, claim=True).put_item(**claim)
            except self.dynamodb.exceptions.ConditionalCheckFailedException as error:
                raise self._already_exists(error.response.get("Item"), delivery) from error
            return
        delivery.earlier_attempts = _number(cancelled, "attempts")
        again = self._claim_with_ledger(claim, delivery, first=False)
        if again is not None and _text(again, CLAIM_ID_ATTR) != delivery.claim_id:
            raise RuntimeError(f"the run ledger entry of {delivery.tick.key} changed while it was claimed; retry")

    def _claim(self, data_record: DataRecord, delivery: Delivery) -> dict[str, Any]:
        item: dict[str, Any] = {
            **self._get_key(data_record.idempotency_key),
            self.expiry_attr: {"N": str(data_record.expiry_timestamp)},
            self.status_attr: {"S": data_record.status},
            CLAIM_ID_ATTR: {"S": delivery.claim_id},
        }
        if data_record.in_progress_expiry_timestamp is not None:
            item[self.in_progress_expiry_attr] = {"N": str(data_record.in_progress_expiry_timestamp)}
        names = {
            "#id": self.key_attr,
            "#expiry": self.expiry_attr,
            "#in_progress_expiry": self.in_progress_expiry_attr,
            "#status": self.status_attr,
            "#claim_id": CLAIM_ID_ATTR,
        }
        now = time.time()
        values: dict[str, Any] = {
            ":now": {"N": str(int(now))},
            ":now_in_millis": {"N": str(int(now * 1000))},
            ":inprogress": {"S": _INPROGRESS},
            ":claim_id": {"S": delivery.claim_id},
        }
        # Powertools' conditions (no record, an expired one, an in-progress one whose attempt has
        # timed out), and: an in-progress record this delivery wrote, or the attempt Lambda retries.
        mine = "#claim_id = :claim_id"
        if delivery.request_id:
            item[REQUEST_ID_ATTR] = {"S": delivery.request_id}
            names["#request_id"] = REQUEST_ID_ATTR
            values[":request_id"] = {"S": delivery.request_id}
            mine = f"({mine} OR #request_id = :request_id)"
        condition = (
            "attribute_not_exists(#id) OR #expiry < :now"
            " OR (#status = :inprogress AND attribute_exists(#in_progress_expiry)"
            " AND #in_progress_expiry < :now_in_millis)"
            f" OR (#status = :inprogress AND {mine})"
        )
        return {
            "TableName": self.table_name,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _claim_with_ledger(self, claim: dict[str, Any], delivery: Delivery, *, first: bool) -> dict[str, Any] | None:
        """Claim and start the ledger entry in one transaction. None when done; the ledger entry
        when only the ledger's condition failed. A claim held elsewhere raises Powertools' error."""
        transaction = [
            {"Put": claim},
            {
                "Update": self.ledger.started_update(
                    delivery.tick, delivery.claim_id, first=first, partitions_total=delivery.partitions_total
                )
            },
        ]
        try:
            self._transact(delivery, transaction, claim=True)
        except self.dynamodb.exceptions.TransactionCanceledException as error:
            claim_reason, ledger_reason = cancellation_reasons(error, 2)[:2]
            if claim_reason.get("Code") == "ConditionalCheckFailed":
                raise self._already_exists(claim_reason.get("Item"), delivery) from error
            if ledger_reason.get("Code") == "ConditionalCheckFailed" and "Item" in ledger_reason:
                return dict(ledger_reason["Item"])
            raise  # a conflict with a concurrent write, or worse: loud, Lambda retries
        return None

    def _already_exists(self, item: Mapping[str, Any] | None, delivery: Delivery) -> IdempotencyItemAlreadyExistsError:
        if not item:
            return IdempotencyItemAlreadyExistsError()
        delivery.holder_request_id = _text(item, REQUEST_ID_ATTR)
        old = self._item_to_data_record(dict(item))
        self._save_to_cache(data_record=old)
        return IdempotencyItemAlreadyExistsError(old_data_record=old)

    # ------------------------------------------------------------------------------- completion
    def _update_record(self, data_record: DataRecord) -> None:
        if data_record.status != _COMPLETED or not data_record.response_data:
            super()._update_record(data_record)
            return
        if self.payload_validation_enabled:
            raise NotImplementedError("payload validation is not used by clockless jobs")
        delivery = self._delivery()
        delivery.phase = Phase.COMPLETING
        result = json.loads(data_record.response_data)
        # The same update Powertools makes for a completed record, as one half of a transaction.
        completion: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": self._get_key(data_record.idempotency_key),
            "UpdateExpression": "SET #response_data = :response_data, #expiry = :expiry, #status = :status",
            "ExpressionAttributeNames": {
                "#expiry": self.expiry_attr,
                "#response_data": self.data_attr,
                "#status": self.status_attr,
            },
            "ExpressionAttributeValues": {
                ":expiry": {"N": str(data_record.expiry_timestamp)},
                ":response_data": {"S": data_record.response_data},
                ":status": {"S": data_record.status},
            },
        }
        ledger_update = (
            self.ledger.succeeded_update(result)
            if delivery.partitions_total is None
            else self.ledger.fanned_out_update(result)
        )
        transaction: list[Any] = [{"Update": completion}, {"Update": ledger_update}]
        # A resend after a lost answer carries the same ClientRequestToken: DynamoDB applies it once.
        self._transact(delivery, transaction)
        delivery.phase = Phase.DONE

    # ---------------------------------------------------------------------------------- release
    def _delete_record(self, data_record: DataRecord) -> None:
        """Powertools releases the claim when the job raised: release it as this delivery's."""
        delivery = self._delivery()
        error = delivery.error
        described = "the job failed" if error is None else f"{type(error).__name__}: {error}"
        delivery.released = self.release(delivery, described)

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
            "ExpressionAttributeNames": {"#claim_id": CLAIM_ID_ATTR, "#status": self.status_attr},
            "ExpressionAttributeValues": {":claim_id": {"S": delivery.claim_id}, ":inprogress": {"S": _INPROGRESS}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if delivery.rerun:
            # The ledger keeps the first success; only the claim goes.
            try:
                self._retrying(delivery).delete_item(**delete)
            except self.dynamodb.exceptions.ConditionalCheckFailedException as failed:
                return self._not_released(failed.response.get("Item"))
            return Release.RELEASED
        failed_update = self.ledger.failed_update(
            delivery.tick,
            delivery.claim_id,
            error,
            duration_ms=delivery.elapsed_ms(),
            failures=getattr(delivery.error, "failures", ()),
        )
        try:
            self._transact(delivery, [{"Delete": delete}, {"Update": failed_update}])
        except self.dynamodb.exceptions.TransactionCanceledException as cancelled:
            claim_reason = cancellation_reasons(cancelled, 1)[0]
            if claim_reason.get("Code") == "ConditionalCheckFailed":
                return self._not_released(claim_reason.get("Item"))
            raise
        return Release.RELEASED

    def _not_released(self, item: Mapping[str, Any] | None) -> Release:
        # Completed, by this delivery (its completion's answer was lost) or by one that took over:
        # either way the tick's effect is taken and recorded.
        if item and _text(item, self.status_attr) == _COMPLETED:
            return Release.COMPLETED
        return Release.NOT_HELD


def _text(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value.get("S", value.get("N")))


def _number(item: Mapping[str, Any], name: str) -> int:
    return int(_text(item, name) or 0)
