"""The run ledger: one item per (job, scheduled time) saying what happened to that tick.

EventBridge Scheduler keeps no run history, so this is the history: status (started, succeeded,
failed), attempts, trigger, timings and the job's summary. `clockless status` and
`clockless backfill` read it to find ticks that never succeeded.

The kit writes it only inside its claim, completion and release transactions
(`clockless.persistence`), so it moves in step with the idempotency record. `attempts` counts the
deliveries whose claim took effect (a resent request never counts twice, a duplicate never
counts); `summary_scope` says whether the summary is the whole tick's or the last attempt's
share. docs/tick-contract.md has the whole contract.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from clockless.items import MAX_LISTED, FailedItem, dump_listed, load_listed
from clockless.tick import Tick, format_scheduled_time, parse_scheduled_time

STATUS_STARTED: Final = "started"
STATUS_SUCCEEDED: Final = "succeeded"
STATUS_FAILED: Final = "failed"
# Set by an operator (`clockless backfill --policy skip`): a missed tick deliberately not replayed.
STATUS_SKIPPED: Final = "skipped"
# Sparse index: only succeeded ticks carry `succeeded_job`, so the last success is one query.
SUCCEEDED_INDEX: Final = "succeeded-by-time"
# What a succeeded tick's summary covers. A retry after a partial run cannot know what the failed
# attempt did before it died, so its summary is its own share, and the entry says so.
SUMMARY_WHOLE_TICK: Final = "tick"
SUMMARY_LAST_ATTEMPT: Final = "last_attempt"
# A tick's failed items (clockless.items): the first MAX_LISTED, as JSON; the summary counts them all.
FAILURES: Final = "failures"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    job: str
    scheduled_time: datetime
    status: str
    attempts: int
    trigger: str | None
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    summary: Mapping[str, Any] | None
    error: str | None
    # SUMMARY_WHOLE_TICK, or SUMMARY_LAST_ATTEMPT when earlier attempts may have done part of the work
    summary_scope: str | None = None
    # A fanned-out tick (docs/fan-out.md): its partitions, how many are done, and when the
    # coordinator handed them out (its own result is `coordinator_summary`).
    partitions_total: int | None = None
    partitions_done: int | None = None
    fanned_out_at: str | None = None
    coordinator_summary: Mapping[str, Any] | None = None
    # A tick held back by its job's overlap policy (clockless.overlap): status `skipped` or
    # `buffered`, why ("overlap: <earlier tick> still running"), and the earlier tick's time.
    reason: str | None = None
    overlap_with: str | None = None
    # The tick's failed items, the first MAX_LISTED (key, reason, message, field, attempts).
    failures: tuple[FailedItem, ...] = ()

    @property
    def failed_items(self) -> int:
        """How many items of the tick failed (the summary's count; the list may be shorter)."""
        counted = (self.summary or {}).get("failed")
        return counted if isinstance(counted, int) and not isinstance(counted, bool) else len(self.failures)

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> LedgerEntry:
        def text(name: str) -> str | None:
            value = item.get(name)
            return None if value is None else str(value.get("S", value.get("N")))

        summary = text("summary")
        duration = text("duration_ms")
        partitions_total = text("partitions_total")
        coordinator_summary = text("coordinator_summary")
        return cls(
            job=str(text("job")),
            scheduled_time=parse_scheduled_time(str(text("scheduled_time"))),
            status=str(text("status")),
            attempts=int(text("attempts") or 0),
            trigger=text("trigger"),
            started_at=text("started_at"),
            finished_at=text("finished_at"),
            duration_ms=None if duration is None else int(duration),
            summary=None if summary is None else json.loads(summary),
            error=text("error"),
            summary_scope=text("summary_scope") or _scope_of_older_entry(summary, int(text("attempts") or 0)),
            partitions_total=None if partitions_total is None else int(partitions_total),
            partitions_done=None if partitions_total is None else int(text("partitions_done") or 0),
            fanned_out_at=text("fanned_out_at"),
            coordinator_summary=None if coordinator_summary is None else json.loads(coordinator_summary),
            reason=text("reason"),
            overlap_with=text("overlap_with"),
            failures=tuple(load_listed(text(FAILURES))),
        )


def _scope_of_older_entry(summary: str | None, attempts: int) -> str | None:
    """Entries written before the scope was stored: the summary was the last attempt's all along."""
    if summary is None:
        return None
    return SUMMARY_WHOLE_TICK if attempts <= 1 else SUMMARY_LAST_ATTEMPT


def iso_now() -> str:
    # time.time(), not datetime.now(): simulated clocks (time-machine) and the wall clock agree.
    return format_scheduled_time(datetime.fromtimestamp(time.time(), UTC))


class RunLedger:
    """Ledger access over a low-level DynamoDB client (the kit's, so no second client is made)."""

    def __init__(self, table_name: str, client: Any, *, retention_seconds: int) -> None:
        self.table_name = table_name
        self.client = client
        self.retention_seconds = retention_seconds

    @staticmethod
    def key(job: str, scheduled_time: str) -> dict[str, Any]:
        return {"job": {"S": job}, "scheduled_time": {"S": scheduled_time}}

    def _expires_at(self) -> dict[str, str]:
        return {"N": str(int(time.time()) + self.retention_seconds)}

    def last_success_before(self, job: str, scheduled_time: datetime) -> datetime | None:
        """The scheduled time of the job's latest succeeded tick before this one."""
        response = self.client.query(
            TableName=self.table_name,
            IndexName=SUCCEEDED_INDEX,
            KeyConditionExpression="succeeded_job = :job AND scheduled_time < :before",
            ExpressionAttributeValues={
                ":job": {"S": job},
                ":before": {"S": format_scheduled_time(scheduled_time)},
            },
            ScanIndexForward=False,
            Limit=1,
        )
        items = response.get("Items") or []
        return parse_scheduled_time(items[0]["scheduled_time"]["S"]) if items else None

    def latest_successes(self, job: str, at_or_before: datetime, limit: int) -> tuple[list[datetime], bool]:
        """The scheduled times of the job's latest `limit` succeeded ticks up to `at_or_before`, newest
        first (one Query of the sparse index), and whether they are all it has (the read not cut)."""
        response = self.client.query(
            TableName=self.table_name,
            IndexName=SUCCEEDED_INDEX,
            KeyConditionExpression="succeeded_job = :job AND scheduled_time <= :until",
            ExpressionAttributeValues={
                ":job": {"S": job},
                ":until": {"S": format_scheduled_time(at_or_before)},
            },
            ScanIndexForward=False,
            Limit=limit,
        )
        found = [parse_scheduled_time(item["scheduled_time"]["S"]) for item in response.get("Items") or []]
        return found, "LastEvaluatedKey" not in response

    def _entry_update(
        self, tick: Tick, update: str, condition: str, names: dict[str, str], values: dict[str, dict[str, str]]
    ) -> dict[str, Any]:
        return {
            "TableName": self.table_name,
            "Key": self.key(tick.job, format_scheduled_time(tick.scheduled_time)),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#status": "status", **names},
            "ExpressionAttributeValues": {":now": {"S": iso_now()}, ":expires_at": self._expires_at(), **values},
            # On a failed condition the claim learns what the entry says (earlier attempts, a success).
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def started_update(
        self, tick: Tick, claim_id: str, *, first: bool, partitions_total: int | None = None
    ) -> dict[str, Any]:
        """The ledger half of the claim: this delivery starts the tick (`attempts` + 1).

        `first`: only if no delivery has touched the tick yet, so the claim learns for free (one
        request) that it is the first. Otherwise: unless the tick already succeeded, and unless
        this very claim is already counted (`claim_id`): a resend DynamoDB did not recognise
        must not count a second attempt.

        `partitions_total`: a fan-out coordinator's claim also says how many partitions the tick
        has, so workers can tell when the last one is done (no extra request).
        """
        condition = (
            "attribute_not_exists(#status)"
            if first
            else "#status <> :succeeded AND (attribute_not_exists(claim_id) OR claim_id <> :claim_id)"
        )
        values: dict[str, dict[str, str]] = {
            ":started": {"S": STATUS_STARTED},
            ":attempt": {"N": str(tick.attempt)},
            ":trigger": {"S": tick.trigger.value},
            ":execution_id": {"S": tick.execution_id or "-"},
            ":claim_id": {"S": claim_id},
            ":one": {"N": "1"},
        }
        if not first:
            values[":succeeded"] = {"S": STATUS_SUCCEEDED}
        fan_out = ""
        if partitions_total is not None:
            fan_out = "partitions_total = :partitions_total, "
            values[":partitions_total"] = {"N": str(partitions_total)}
        return self._entry_update(
            tick,
            "SET #status = :started, attempt = :attempt, #trigger = :trigger, started_at = :now, "
            f"execution_id = :execution_id, claim_id = :claim_id, {fan_out}expires_at = :expires_at "
            "ADD attempts :one",
            condition,
            {"#trigger": "trigger"},
            values,
        )

    def failed_update(
        self, tick: Tick, claim_id: str, error: str, *, duration_ms: int, failures: Sequence[FailedItem] = ()
    ) -> dict[str, Any]:
        """The ledger half of a release: this delivery's attempt failed. Only while the entry is
        still this delivery's (a later claim owns it otherwise) and never over a success.
        `failures`: the items that failed it (clockless.items), listed on the entry."""
        values = {
            ":failed": {"S": STATUS_FAILED},
            ":succeeded": {"S": STATUS_SUCCEEDED},
            ":claim_id": {"S": claim_id},
            ":duration": {"N": str(duration_ms)},
            ":error": {"S": error[:1000]},
        }
        update = "SET #status = :failed, finished_at = :now, duration_ms = :duration, #error = :error, "
        if failures:
            update += f"{FAILURES} = :failures, "
            values[":failures"] = {"S": dump_listed(failures[:MAX_LISTED])}
        return self._entry_update(
            tick,
            update + "expires_at = :expires_at",
            "claim_id = :claim_id AND #status <> :succeeded",
            {"#error": "error"},
            values,
        )

    def succeeded_update(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """The ledger half of the completion transaction, built from the job's stored result."""
        key = self.key(str(result["job"]), str(result["scheduled_time"]))
        summary = {"S": json.dumps(result.get("summary") or {}, sort_keys=True)}
        if result.get("rerun"):
            # The tick had succeeded before (its idempotency record expired): keep the first
            # outcome and note the re-run beside it.
            return {
                "TableName": self.table_name,
                "Key": key,
                "UpdateExpression": "SET last_rerun_at = :now, last_rerun_summary = :summary",
                "ExpressionAttributeValues": {":now": {"S": str(result["finished_at"])}, ":summary": summary},
            }
        values = {
            ":succeeded": {"S": STATUS_SUCCEEDED},
            ":job": {"S": str(result["job"])},
            ":finished_at": {"S": str(result["finished_at"])},
            ":duration": {"N": str(int(result["duration_ms"]))},
            ":summary": summary,
            ":scope": {"S": str(result.get("summary_scope") or SUMMARY_WHOLE_TICK)},
            ":expires_at": self._expires_at(),
        }
        # A success within the job's tolerance lists the items that failed; any other drops an
        # earlier attempt's list.
        failures = [FailedItem.from_record(record) for record in result.get(FAILURES) or []]
        listing, removing = (f", {FAILURES} = :failures", "") if failures else ("", f", {FAILURES}")
        if failures:
            values[":failures"] = {"S": dump_listed(failures[:MAX_LISTED])}
        return {
            "TableName": self.table_name,
            "Key": key,
            "UpdateExpression": (
                "SET #status = :succeeded, succeeded_job = :job, finished_at = :finished_at, "
                f"duration_ms = :duration, summary = :summary, summary_scope = :scope, expires_at = :expires_at"
                f"{listing} REMOVE #error{removing}"
            ),
            "ExpressionAttributeNames": {"#status": "status", "#error": "error"},
            "ExpressionAttributeValues": values,
        }

    def fanned_out_update(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """The ledger half of a fan-out coordinator's completion: when it handed the partitions out
        and its result. Never the status: the tick succeeds when its last item is accounted for
        (the finisher may already have said so), so this must not regress it."""
        return {
            "TableName": self.table_name,
            "Key": self.key(str(result["job"]), str(result["scheduled_time"])),
            "UpdateExpression": "SET fanned_out_at = :finished_at, coordinator_summary = :summary",
            "ExpressionAttributeValues": {
                ":finished_at": {"S": str(result["finished_at"])},
                ":summary": {"S": json.dumps(result.get("summary") or {}, sort_keys=True)},
            },
        }

    def record_skipped(self, job: str, scheduled_time: datetime, *, reason: str) -> bool:
        """Record an operator's decision not to replay a missed tick. False if the tick has an entry."""
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    **self.key(job, format_scheduled_time(scheduled_time)),
                    "status": {"S": STATUS_SKIPPED},
                    "attempts": {"N": "0"},
                    "trigger": {"S": "backfill"},
                    "finished_at": {"S": iso_now()},
                    "error": {"S": reason[:1000]},
                    "expires_at": self._expires_at(),
                },
                ConditionExpression="attribute_not_exists(job)",
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def entries(self, job: str, start: datetime, end: datetime) -> list[LedgerEntry]:
        """Every recorded tick of the job with start <= scheduled time < end, oldest first."""
        entries: list[LedgerEntry] = []
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "job = :job AND scheduled_time BETWEEN :start AND :end",
            "ExpressionAttributeValues": {
                ":job": {"S": job},
                ":start": {"S": format_scheduled_time(start)},
                ":end": {"S": format_scheduled_time(end)},
            },
        }
        while True:
            response = self.client.query(**request)
            entries.extend(LedgerEntry.from_item(item) for item in response.get("Items") or [])
            if "LastEvaluatedKey" not in response:
                break
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return [entry for entry in entries if entry.scheduled_time < end]
