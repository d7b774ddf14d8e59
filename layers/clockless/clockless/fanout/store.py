"""Every read and write of a fanned-out tick's partition records and lane records in the ledger
table (`clockless.fanout.keys` has where each lives and what its attributes are called); the tick
entry's are `clockless.fanout.tick_store`'s.

One method per transition of `clockless.state`, its condition rendered from the table there
(tests/unit/kit/test_store.py makes every request and fails on a condition the table lacks).
`PartitionStore` writes as the worker holding the partition's lease, so two workers never run one
partition at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clockless.fanout.keys import (
    FAILURE_NOTES,
    LAST_ERROR,
    THROTTLE_CONTINUATIONS,
    lane_key,
    partition_key,
)
from clockless.fanout.tick_store import TickStore
from clockless.fanout.types import FailedKeys, Lease, LeaseLost, TickUnclaimed
from clockless.state import (
    COUNT_REPLAYED,
    HAND_ON,
    LIST_FAILED,
    MARK_DONE,
    NAME_EXHAUSTED,
    NOTE_FAILURES,
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
class PartitionStore:
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

    @property
    def tick(self) -> TickStore:
        return TickStore(self.client, self.table, self.job, self.scheduled_time)

    def read(self) -> PartitionRecord:
        """The partition record, read consistently (no record: `exists` False)."""
        response = self.client.get_item(TableName=self.table, Key=self.key, ConsistentRead=True)
        return PartitionRecord.from_item(response.get("Item"))

    def acquire(self, *, lease_until_ms: int, hop: int, existing_only: bool = False, receives: int = 1) -> Lease:
        """Take the partition: free, expired, or already this run's (its own resend).
        `existing_only`: only a partition whose record exists (a continuation's): otherwise
        `Lease(missing=True)`, nothing written. `receives`: the message's receive count, for
        operators."""
        transition = TAKE_CONTINUED_LEASE if existing_only else TAKE_LEASE
        condition = transition.render()
        try:
            response = self.client.update_item(
                **self._lease_update(lease_until_ms, hop, condition, receives),
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
        self, *, lease_until_ms: int, hop: int, partitions_total: int, least: int = 1, receives: int = 1
    ) -> Lease:
        """Create the partition's record with this run's lease, in one transaction with the check
        that the tick was fanned out into `least` (the partition's place among this worker's, from 1)
        to `partitions_total` partitions (clockless.fanout.trust). A record that exists
        already was created under that check: it is taken as `acquire` takes it.
        `Lease(untrusted=<the tick entry>)` when the check failed; nothing is written then."""
        create = self._lease_update(lease_until_ms, hop, TAKE_FIRST_LEASE.render(), receives)
        for unused in (":done", ":now"):
            del create["ExpressionAttributeValues"][unused]
        create["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        try:
            # botocore fills in ClientRequestToken: its own resend after a lost answer is a no-op.
            tick_check = self.tick.claimed_check(partitions_total, least)
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
            return self.acquire(lease_until_ms=lease_until_ms, hop=hop, receives=receives)
        return Lease(acquired=True)

    def _lease_update(self, lease_until_ms: int, hop: int, condition: str, receives: int = 1) -> dict[str, Any]:
        update = (
            "SET lease_owner = :me, lease_until = :until, hops = :hop, expires_at = :expires_at, "
            "#status = if_not_exists(#status, :running), receives = :receives"
        )
        return {
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

    def note_error(self, last_error: str) -> None:
        """`last_error` for operators and the lease released, while the lease is this run's (a
        failing run says why; its run is over)."""
        values = {":last_error": {"S": one_line(last_error)}, ":zero": {"N": "0"}}
        self._note(RELEASE, f"SET {LAST_ERROR} = :last_error, lease_until = :zero", values)

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
            self.tick.count_done(self.partition),
        ]

    def exhausted_actions(self) -> list[dict[str, Any]]:
        """`name-exhausted`: the partition added to its tick entry's `partitions_exhausted` (a set:
        once however often), only while the partition is not done; the tick entry must be a fan-out
        coordinator's. A failed condition on the partition returns its record (ALL_OLD)."""
        condition = NAME_EXHAUSTED.render()
        return [
            {
                "ConditionCheck": {
                    "TableName": self.table,
                    "Key": self.key,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":done": {"S": PartitionStatus.DONE.value}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            self.tick.count_exhausted(self.partition),
        ]

    def mark_unrun(self, least: int) -> bool:
        """The partition, whose message this worker cannot read, named exhausted on its tick while it
        is not done and only if the tick has it (`count-unrun`). False: it was done. A tick without
        it (fanned out into fewer than `least`) is TickUnclaimed (nothing written)."""
        actions = self.exhausted_actions()
        actions[1] = self.tick.count_unrun(self.partition, least)
        try:
            self.client.transact_write_items(TransactItems=actions)
        except self.client.exceptions.TransactionCanceledException as error:
            partition, tick = cancellation_reasons(error, 2)[:2]
            if tick.get("Code") == "ConditionalCheckFailed":
                raise TickUnclaimed(
                    f"{self.job}@{self.scheduled_time} was not fanned out into {least} partitions or more"
                ) from None
            if partition.get("Code") == "ConditionalCheckFailed":
                return False
            raise
        return True

    def note_failures(self, notes: list[dict[str, Any]], *, max_listed: int) -> None:
        """`note-failures`: failure notes (JSON texts) appended while the record lists fewer than
        `max_listed` (a full list refuses the write: the tick's count still has them all)."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=self.key,
                UpdateExpression=f"SET {FAILURE_NOTES} = list_append(if_not_exists({FAILURE_NOTES}, :empty), :notes)",
                ConditionExpression=NOTE_FAILURES.render(),
                ExpressionAttributeValues={":empty": {"L": []}, ":notes": {"L": notes}, ":max": {"N": str(max_listed)}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return

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
