"""Every read and write of a fanned-out tick's entry in the ledger table: claimed, counted,
settled, released from a buffer, failed at its start, reaped (`clockless.fanout.keys` has where it
lives and what its attributes are called), and the reaper's read of the entries still open.

One method per transition of `clockless.state`, its condition rendered from the table there
(tests/unit/kit/test_store.py makes every request and fails on a condition the table lacks).
`clockless.fanout.store` holds the partition and lane records, written by the lease holder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clockless.fanout.keys import (
    EXHAUSTED,
    METRIC_PENDING,
    REAPED_AT,
    tick_key,
    work_job,
)
from clockless.ledger import FAILURES, SUMMARY_WHOLE_TICK, iso_now
from clockless.overlap import START_FAILED
from clockless.state import (
    CHECK_TICK_CLAIMED,
    COUNT_DONE,
    COUNT_EXHAUSTED,
    COUNT_UNRUN,
    FAIL_START,
    REAP,
    RELEASE_BUFFERED,
    REPORTED,
    TickEntry,
    TickStatus,
    Transition,
)


@dataclass(frozen=True, slots=True)
class TickStore:
    """A tick's entry in the ledger table, as the fan-out reads, checks and settles it."""

    client: Any
    table: str
    job: str
    scheduled_time: str

    @property
    def key(self) -> dict[str, Any]:
        return tick_key(self.job, self.scheduled_time)

    def read(self, *, projection: str | None = None) -> TickEntry:
        """The entry, read consistently (`projection`: only those attributes; `#status` for status)."""
        request: dict[str, Any] = {"TableName": self.table, "Key": self.key, "ConsistentRead": True}
        if projection is not None:
            request["ProjectionExpression"] = projection
            request["ExpressionAttributeNames"] = {"#status": "status"}
        return TickEntry.from_item(self.client.get_item(**request).get("Item"))

    def records(self) -> list[dict[str, Any]]:
        """The tick's partition and lane records (one Query per MB, read consistently)."""
        records: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "job = :job AND begins_with(scheduled_time, :prefix)",
            "ExpressionAttributeValues": {
                ":job": {"S": work_job(self.job)},
                ":prefix": {"S": f"{self.scheduled_time}#"},
            },
            "ConsistentRead": True,
        }
        while True:
            response = self.client.query(**request)
            records.extend(response.get("Items") or [])
            if "LastEvaluatedKey" not in response:
                return records
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def claimed_check(self, partitions_total: int, least: int = 1) -> dict[str, Any]:
        """`check-tick-claimed`: the transaction action that holds a partition's first run to a
        claimed tick fanned out into `least` to `partitions_total` partitions (clockless.fanout.trust)."""
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": self.key,
                "ConditionExpression": CHECK_TICK_CLAIMED.render(),
                "ExpressionAttributeValues": {
                    ":least": {"N": str(least)},
                    ":partitions_total": {"N": str(partitions_total)},
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def count_done(self, partition: str) -> dict[str, Any]:
        """`count-done`: `partitions_done` + 1, in the transaction that marks `partition` done; a
        partition redriven after it exhausted its receives is no longer counted so."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": self.key,
                "UpdateExpression": f"ADD partitions_done :one DELETE {EXHAUSTED} :partition",
                "ConditionExpression": COUNT_DONE.render(),
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":partition": {"SS": [partition]}},
            }
        }

    def count_exhausted(self, partition: str) -> dict[str, Any]:
        """`count-exhausted`: `partition` added to `partitions_exhausted` (a set: once however often)."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": self.key,
                "UpdateExpression": f"ADD {EXHAUSTED} :partition",
                "ConditionExpression": COUNT_EXHAUSTED.render(),
                "ExpressionAttributeValues": {":partition": {"SS": [partition]}},
            }
        }

    def count_unrun(self, partition: str, least: int) -> dict[str, Any]:
        """`count-unrun`: `partition`, which this worker cannot run, added to `partitions_exhausted`
        only if the tick was fanned out into at least `least` partitions (so it has this one)."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": self.key,
                "UpdateExpression": f"ADD {EXHAUSTED} :partition",
                "ConditionExpression": COUNT_UNRUN.render(),
                "ExpressionAttributeValues": {":partition": {"SS": [partition]}, ":least": {"N": str(least)}},
            }
        }

    def settle(self, transition: Transition, update: str, values: dict[str, Any]) -> tuple[bool, TickEntry]:
        """`settle` (or its exhausted forms): the settling update, conditioned on the count the
        finisher read. (True, the attributes it changed, as they were) when it applied; (False, the
        entry as it is) when its condition failed."""
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=self.key,
                UpdateExpression=update,
                ConditionExpression=transition.render(),
                ExpressionAttributeNames={"#status": "status", "#error": "error"},
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self.client.exceptions.ConditionalCheckFailedException as error:
            return False, TickEntry.from_item(error.response.get("Item"))
        return True, TickEntry.from_item(response.get("Attributes"))

    def reported(self) -> None:
        """`reported`: `metric_pending` removed once TickSucceeded is in the logs (clockless.fanout.finisher)."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=self.key,
                UpdateExpression=f"REMOVE {METRIC_PENDING}",
                ConditionExpression=REPORTED.render(),
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return  # another delivery reported it

    def release_buffered(self, *, released_by: str, partitions_total: int) -> bool:
        """`release-buffered`: the buffered tick claimed for its start, once: `buffered` becomes
        `started` (with the tick's `partitions_total`, so its workers trust it), or it was already
        released by the same finished tick (a redelivered start message goes on sending its
        partitions), or the tick reaper failed it (a start message redriven from the work DLQ, or
        a late release, starts it after all). False: it is none of these (nothing written)."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=self.key,
                UpdateExpression=(
                    "SET #status = :started, started_at = :now, partitions_total = :total, released_by = :by, "
                    f"claim_id = :by, attempts = :one REMOVE {START_FAILED}, #error, finished_at, finished_by"
                ),
                ConditionExpression=RELEASE_BUFFERED.render(),
                ExpressionAttributeNames={"#status": "status", "#error": "error"},
                ExpressionAttributeValues={
                    ":started": {"S": TickStatus.STARTED.value},
                    ":buffered": {"S": TickStatus.BUFFERED.value},
                    ":now": {"S": iso_now()},
                    ":total": {"N": str(partitions_total)},
                    ":by": {"S": released_by},
                    ":one": {"N": "1"},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def fail_start(self, *, after: str, error: str, mark: str) -> bool:
        """`fail-start`: the buffered tick settled `failed` by the tick reaper, only while it is still
        buffered behind `after`, with `start_failed` (a redriven start message may still start it).
        True for the call whose update applied, also when its answer was lost and the update resent
        (`mark`, a value unique to the call, is found as `finished_by`)."""
        return self._fail(
            FAIL_START,
            f"SET #status = :failed, #error = :error, {START_FAILED} = :after",
            {":error": {"S": error}, ":after": {"S": after}, ":buffered": {"S": TickStatus.BUFFERED.value}},
            mark=mark,
        )

    def reap(
        self,
        *,
        claim_id: str,
        partitions_done: int,
        error: str,
        failures: str,
        summary: str,
        mark: str,
        not_done: Sequence[str] = (),
    ) -> bool:
        """`reap`: the started tick settled `failed` by the tick reaper, naming the partitions not
        done (`failures`, as the ledger lists them; `summary`, its JSON), only while it is as the
        reaper read it: `started` by `claim_id`, `partitions_done` done. The partitions `not_done`
        (those with a record) are added to `partitions_exhausted`, as a run failing its last receive
        adds its own: each one's later done takes it out, and the finisher settles the tick again
        naming only those still not done. True as `fail_start`."""
        exhausted: dict[str, Any] = {":not_done": {"SS": list(not_done)}} if not_done else {}
        return self._fail(
            REAP,
            f"SET #status = :failed, #error = :error, {FAILURES} = :failures, summary = :summary, "
            "summary_scope = :scope",
            {
                **exhausted,
                ":started": {"S": TickStatus.STARTED.value},
                ":claim": {"S": claim_id},
                ":done": {"N": str(partitions_done)},
                ":error": {"S": error},
                ":failures": {"S": failures},
                ":summary": {"S": summary},
                ":scope": {"S": SUMMARY_WHOLE_TICK},
            },
            mark=mark,
            add=f" ADD {EXHAUSTED} :not_done" if not_done else "",
        )

    def _fail(self, transition: Transition, update: str, values: dict[str, Any], *, mark: str, add: str = "") -> bool:
        """The tick reaper's settling update (`reaped_at` set); `finished_by`: a resend of this very
        update after a lost answer finds its own mark."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=self.key,
                UpdateExpression=f"{update}, finished_at = :now, finished_by = :mark, {REAPED_AT} = :now{add}",
                ConditionExpression=transition.render(),
                ExpressionAttributeNames={"#status": "status", "#error": "error"},
                ExpressionAttributeValues={
                    **values,
                    ":failed": {"S": TickStatus.FAILED.value},
                    ":now": {"S": iso_now()},
                    ":mark": {"S": mark},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self.client.exceptions.ConditionalCheckFailedException as refused:
            # failed already: by this very update (its answer lost and resent), or by a duplicate
            # reaper; or the tick moved on since it was read
            return TickEntry.from_item(refused.response.get("Item")).finished_by == mark
        return True


def open_ticks(client: Any, table: str, job: str, start: str, end: str) -> list[TickEntry]:
    """The tick reaper's read: `job`'s tick entries scheduled in [`start`, `end`] still `started`
    or `buffered` (one Query per MB, read consistently)."""
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "job = :job AND scheduled_time BETWEEN :start AND :end",
        "FilterExpression": "#status IN (:started, :buffered)",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {
            ":job": {"S": job},
            ":start": {"S": start},
            ":end": {"S": end},
            ":started": {"S": TickStatus.STARTED.value},
            ":buffered": {"S": TickStatus.BUFFERED.value},
        },
        "ConsistentRead": True,
    }
    entries: list[TickEntry] = []
    while True:
        response = client.query(**request)
        entries.extend(TickEntry.from_item(item) for item in response.get("Items") or [])
        if "LastEvaluatedKey" not in response:
            return entries
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
