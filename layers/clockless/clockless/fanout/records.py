"""A partition's records in the ledger table, as the worker holding its lease writes them.

Its partition record and lane records, and the partition's share of the tick entry
(`clockless.fanout.keys` has where each lives and what its attributes are called).

Every write here is conditional on the lease, so two workers never run one partition at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clockless.fanout.keys import EXHAUSTED, LAST_ERROR, THROTTLE_CONTINUATIONS, lane_key, partition_key, tick_key
from clockless.fanout.state import (
    COUNT_DONE,
    COUNT_EXHAUSTED,
    COUNT_REPLAYED,
    HAND_ON,
    LIST_FAILED,
    MARK_DONE,
    NAME_EXHAUSTED,
    NOTE_ERROR,
    RELEASE,
    STORE_CURSOR,
    TAKE_CONTINUED_LEASE,
    TAKE_FIRST_LEASE,
    TAKE_LEASE,
    LeaseDecision,
    PartitionRecord,
    PartitionStatus,
    Transition,
    decide_lease,
    refusal,
)
from clockless.fanout.types import FailedKeys, Lease, LeaseLost
from clockless.throttle import cancellation_codes, cancellation_reasons

MAX_LAST_ERROR_LENGTH: Final = 300


def one_line(text: str, limit: int = MAX_LAST_ERROR_LENGTH) -> str:
    """`last_error` is read on one line: no newline, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def now_ms() -> int:
    # time.time(): the simulator's clock (time-machine) moves it, as it moves the ledger's.
    return int(time.time() * 1000)


@dataclass
class PartitionRecords:
    """The partition's record, as one worker (the lease holder `owner`) writes it."""

    client: Any
    table: str
    job: str
    scheduled_time: str
    partition: str
    owner: str
    retention_seconds: int
    expires_at: int = field(default=0)

    def __post_init__(self) -> None:
        # Once per worker run, so a transaction resent by this run carries the same bytes (and token).
        if not self.expires_at:
            self.expires_at = int(time.time()) + self.retention_seconds

    @property
    def key(self) -> dict[str, Any]:
        return partition_key(self.job, self.scheduled_time, self.partition)

    def lane_key(self, lane: int) -> dict[str, Any]:
        return lane_key(self.job, self.scheduled_time, self.partition, lane)

    def acquire(
        self, *, lease_until_ms: int, hop: int, existing_only: bool = False, receives: int = 1, message_id: str = ""
    ) -> Lease:
        """Take the partition: free, expired, or already this run's (its own resend).
        `existing_only`: only a partition whose record exists (a continuation's): otherwise
        `Lease(missing=True)`, nothing written. `receives` and `message_id`: the message's receive
        count and SQS id, for operators and for the watch over it (clockless.fanout.watch)."""
        transition = TAKE_CONTINUED_LEASE if existing_only else TAKE_LEASE
        condition = transition.render()
        try:
            response = self.client.update_item(
                **self._lease_update(lease_until_ms, hop, condition, receives, message_id),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self.client.exceptions.ConditionalCheckFailedException as error:
            old = error.response.get("Item") or {}
            if not old:
                return Lease(acquired=False, missing=True)
            return _refused(old)
        record = PartitionRecord.from_item(response.get("Attributes"))
        return Lease(
            acquired=True,
            cursor=record.cursor,
            failed_items=record.failed_items,
            throttle_continuations=record.throttle_continuations or 0,
        )

    def acquire_first(
        self, *, lease_until_ms: int, hop: int, tick_check: dict[str, Any], receives: int = 1, message_id: str = ""
    ) -> Lease:
        """Create the partition's record with this run's lease, in one transaction with
        `tick_check` (the tick entry's condition: clockless.fanout.trust). A record that exists
        already was created under that check: it is taken as `acquire` takes it.
        `Lease(untrusted=<the tick entry>)` when the check failed; nothing is written then."""
        create = self._lease_update(lease_until_ms, hop, TAKE_FIRST_LEASE.render(), receives, message_id)
        for unused in (":done", ":now"):
            del create["ExpressionAttributeValues"][unused]
        create["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        try:
            # botocore fills in ClientRequestToken: its own resend after a lost answer is a no-op.
            self.client.transact_write_items(TransactItems=[{"Update": create}, tick_check])
        except self.client.exceptions.TransactionCanceledException as error:
            mine, tick = cancellation_reasons(error, 2)[:2]
            if tick.get("Code") == "ConditionalCheckFailed":
                return Lease(acquired=False, untrusted=dict(tick.get("Item") or {}))
            if mine.get("Code") != "ConditionalCheckFailed":
                raise
            old = dict(mine.get("Item") or {})
            decision = decide_lease(PartitionRecord.from_item(old), owner=self.owner, now_ms=now_ms())
            if decision is not LeaseDecision.TAKE:
                return _refused(old)  # done, or held: one request, as a plain acquire would cost
            return self.acquire(lease_until_ms=lease_until_ms, hop=hop, receives=receives, message_id=message_id)
        return Lease(acquired=True)

    def _lease_update(
        self, lease_until_ms: int, hop: int, condition: str, receives: int = 1, message_id: str = ""
    ) -> dict[str, Any]:
        update = (
            "SET lease_owner = :me, lease_until = :until, hops = :hop, expires_at = :expires_at, "
            "#status = if_not_exists(#status, :running), receives = :receives"
        )
        request: dict[str, Any] = {
            "TableName": self.table,
            "Key": self.key,
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":me": {"S": self.owner},
                ":until": {"N": str(lease_until_ms)},
                ":hop": {"N": str(hop)},
                ":receives": {"N": str(receives)},
                ":expires_at": {"N": str(self.expires_at)},
                ":running": {"S": PartitionStatus.RUNNING.value},
                ":done": {"S": PartitionStatus.DONE.value},
                ":now": {"N": str(now_ms())},
            },
        }
        if message_id:
            request["UpdateExpression"] += ", message_id = :message_id"
            request["ExpressionAttributeValues"][":message_id"] = {"S": message_id}
        return request

    def store_cursor(self, cursor: Mapping[str, Any], *, already_done: int = 0) -> None:
        """The cursor after a page, with the page's `already_done` (see `_update`)."""
        self._update(STORE_CURSOR, "SET #cursor = :cursor", cursor, already_done, {})

    def hand_on(
        self,
        cursor: Mapping[str, Any] | None,
        *,
        already_done: int = 0,
        last_error: str | None = None,
        throttle_continuations: int | None = None,
    ) -> None:
        """Stop here for a continuation: the cursor stored (with its page's `already_done`; None:
        the stored one stands) and the lease released (0), in one write; after throttling, also
        `last_error` and the new count of `throttle_continuations` (set, not added: a resend of
        this write counts once)."""
        sets = ["lease_until = :zero"]
        values: dict[str, Any] = {":zero": {"N": "0"}}
        if last_error is not None:
            sets.append(f"{LAST_ERROR} = :last_error")
            values[":last_error"] = {"S": one_line(last_error)}
        if throttle_continuations is not None:
            sets.append(f"{THROTTLE_CONTINUATIONS} = :continuations")
            values[":continuations"] = {"N": str(throttle_continuations)}
        if cursor is None:
            self._note(RELEASE, "SET " + ", ".join(sets), values)
            return
        self._update(HAND_ON, "SET #cursor = :cursor, " + ", ".join(sets), cursor, already_done, values)

    def note_error(self, last_error: str, *, release: bool = False) -> None:
        """`last_error` for operators, while the lease is this run's (a failing run says why);
        `release`: the lease too (the run is over)."""
        values = {":last_error": {"S": one_line(last_error)}}
        update = f"SET {LAST_ERROR} = :last_error"
        if release:
            update += ", lease_until = :zero"
            values[":zero"] = {"N": "0"}
        self._note(RELEASE if release else NOTE_ERROR, update, values)

    def _note(self, transition: Transition, update: str, values: dict[str, Any]) -> None:
        """A write that moves no cursor (so counts nothing), while the lease is this run's; a
        resend after a lost answer writes the same values again."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=self.key,
                UpdateExpression=update,
                ConditionExpression=transition.render(),
                ExpressionAttributeValues={":me": {"S": self.owner}, **values},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            raise LeaseLost(
                f"partition {self.partition} of {self.job}@{self.scheduled_time} is leased by another worker"
            ) from None

    def _update(
        self, transition: Transition, update: str, cursor: Mapping[str, Any], already_done: int, values: dict[str, Any]
    ) -> None:
        """A cursor write, counting the items its page found already done in the same write:
        a run that dies before it reads the page again and counts them then, never twice
        (already-done items stay in the index, applied ones leave it). A resend of the write
        after a lost answer finds its own cursor stored and changes nothing (the ADD would
        count twice), so the write is conditional on the cursor moving; cursors only move on."""
        text = json.dumps(cursor, sort_keys=True)
        request: dict[str, Any] = {
            "TableName": self.table,
            "Key": self.key,
            "UpdateExpression": update + (" ADD already_done :already_done" if already_done else ""),
            "ConditionExpression": transition.render(),
            "ExpressionAttributeNames": {"#cursor": "cursor"},
            "ExpressionAttributeValues": {":me": {"S": self.owner}, ":cursor": {"S": text}, **values},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if already_done:
            request["ExpressionAttributeValues"][":already_done"] = {"N": str(already_done)}
        try:
            self.client.update_item(**request)
        except self.client.exceptions.ConditionalCheckFailedException as error:
            old = PartitionRecord.from_item(error.response.get("Item"))
            if old.lease_owner == self.owner and old.cursor_text == text:
                return  # this very write, applied, its answer lost and resent
            raise LeaseLost(
                f"partition {self.partition} of {self.job}@{self.scheduled_time} is leased by another worker"
            ) from None

    def done_transaction(self, *, already_done: int = 0) -> list[dict[str, Any]]:
        """The partition done (with its last page's `already_done`, as a cursor write counts
        its page's) and the tick's `partitions_done` + 1, as one transaction."""
        values: dict[str, Any] = {
            ":done": {"S": PartitionStatus.DONE.value},
            ":zero": {"N": "0"},
            ":me": {"S": self.owner},
        }
        update = "SET #status = :done, lease_until = :zero REMOVE #cursor"
        if already_done:
            update += " ADD already_done :already_done"
            values[":already_done"] = {"N": str(already_done)}
        return [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": self.key,
                    "UpdateExpression": update,
                    "ConditionExpression": MARK_DONE.render(),
                    "ExpressionAttributeNames": {"#status": "status", "#cursor": "cursor"},
                    "ExpressionAttributeValues": values,
                }
            },
            {
                "Update": {
                    "TableName": self.table,
                    "Key": tick_key(self.job, self.scheduled_time),
                    # A partition redriven after it exhausted its receives is no longer counted so.
                    "UpdateExpression": f"ADD partitions_done :one DELETE {EXHAUSTED} :partition",
                    "ConditionExpression": COUNT_DONE.render(),
                    "ExpressionAttributeValues": {":one": {"N": "1"}, ":partition": {"SS": [self.partition]}},
                }
            },
        ]

    def exhausted_actions(
        self, transition: Transition = NAME_EXHAUSTED, values: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The partition added to its tick entry's `partitions_exhausted` (a set: once however often),
        only while the partition is not done and whatever else `transition` (one that names a
        partition exhausted, its condition's values in `values`) asks of it; the tick entry must be
        a fan-out coordinator's. A failed condition on the partition returns its record (ALL_OLD)."""
        condition = transition.render()
        return [
            {
                "ConditionCheck": {
                    "TableName": self.table,
                    "Key": self.key,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":done": {"S": PartitionStatus.DONE.value}, **(values or {})},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Update": {
                    "TableName": self.table,
                    "Key": tick_key(self.job, self.scheduled_time),
                    "UpdateExpression": f"ADD {EXHAUSTED} :partition",
                    "ConditionExpression": COUNT_EXHAUSTED.render(),
                    "ExpressionAttributeValues": {":partition": {"SS": [self.partition]}},
                }
            },
        ]

    def mark_exhausted(self) -> bool:
        """The partition named on its tick entry as having failed every receive, only while the
        partition is not done (a run that failed after marking it done, in its finisher, leaves
        nothing undone). False: it was done."""
        try:
            self.client.transact_write_items(TransactItems=self.exhausted_actions())
        except self.client.exceptions.TransactionCanceledException as error:
            if cancellation_codes(error)[:1] == ["ConditionalCheckFailed"]:
                return False
            raise
        return True

    def lane_counter(self, lane: int, applied: int) -> dict[str, Any]:
        """Applied items, counted in the transaction that applies them (they leave the index, so
        nothing finds them again). Items found already done are counted with the cursor instead."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": self.lane_key(lane),
                "UpdateExpression": "SET expires_at = :expires_at ADD applied :applied",
                "ExpressionAttributeValues": {
                    ":expires_at": {"N": str(self.expires_at)},
                    ":applied": {"N": str(applied)},
                },
            }
        }

    def failed_record(self, keys: list[str]) -> dict[str, Any]:
        """Items that cannot be applied: their keys kept on the partition record, counted once."""
        names = {f":k{index}": {"S": key} for index, key in enumerate(keys)}

        return {
            "Update": {
                "TableName": self.table,
                "Key": self.key,
                "UpdateExpression": "ADD failed_items :keys, failed :n",
                "ConditionExpression": LIST_FAILED.render(list(names)),
                "ExpressionAttributeValues": {":keys": {"SS": sorted(keys)}, ":n": {"N": str(len(keys))}, **names},
            }
        }

    def replay_counter(self, keys: list[str], applied: int, already_done: int) -> dict[str, Any]:
        """Replayed items leave `failed_items` and move from `failed` to applied / already done, once:
        only while every key is still in the set (a duplicate replay changes nothing)."""
        names = {f":k{index}": {"S": key} for index, key in enumerate(keys)}

        return {
            "Update": {
                "TableName": self.table,
                "Key": self.key,
                "UpdateExpression": (
                    "DELETE failed_items :keys "
                    "ADD replayed_items :keys, failed :minus, applied :applied, already_done :already_done"
                ),
                "ConditionExpression": COUNT_REPLAYED.render(list(names)),
                "ExpressionAttributeValues": {
                    ":keys": {"SS": sorted(keys)},
                    ":minus": {"N": str(-len(keys))},
                    ":applied": {"N": str(applied)},
                    ":already_done": {"N": str(already_done)},
                    **names,
                },
            }
        }

    def failed_keys(self) -> FailedKeys | None:
        """The keys listed failed and those replayed already; None when the partition has no
        record (it never ran, so none of its items failed)."""
        response = self.client.get_item(
            TableName=self.table,
            Key=self.key,
            ConsistentRead=True,
            ProjectionExpression="failed_items, replayed_items, #status",
            ExpressionAttributeNames={"#status": "status"},
        )
        record = PartitionRecord.from_item(response.get("Item"))
        if not record.exists:
            return None
        return FailedKeys(record.failed_items, record.replayed_items)


def _refused(item: Mapping[str, Any]) -> Lease:
    """The lease not taken: the partition is done, or a live worker holds it."""
    old = PartitionRecord.from_item(item)
    if refusal(old) is LeaseDecision.DONE:
        return Lease(acquired=False, done=True)
    return Lease(acquired=False, holder_until_ms=old.lease_ends)
