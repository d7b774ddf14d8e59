"""A fanned-out tick's progress, read from the ledger records docs/fan-out.md describes: the tick
entry (partitions_total, partitions_done, status, and the summary once finished) and the tick's
work records under `<job>#work` (a partition record per partition, a lane record per worker lane,
whose applied/already_done/failed counters add up to the tick's so far)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from clockless import format_scheduled_time, parse_scheduled_time
from clockless.fanout.finisher import Finisher
from clockless.fanout.records import COUNTERS, STATUS_RUNNING
from clockless.ledger import STATUS_SUCCEEDED, RunLedger


@dataclass(frozen=True)
class TickProgress:
    job: str
    scheduled_time: datetime
    status: str
    partitions_total: int
    partitions_done: int
    # partition records a worker has started and not finished
    partitions_running: int
    applied: int
    already_done: int
    failed: int
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status != "started"

    def describe(self) -> str:
        """One line: `7/16 partitions done (3 running), 1,234 applied, 3 already done, 0 failed`."""
        running = f" ({self.partitions_running} running)" if self.partitions_running and not self.finished else ""
        return (
            f"{self.partitions_done}/{self.partitions_total} partitions done{running}, {self.applied:,} applied, "
            f"{self.already_done:,} already done, {self.failed:,} failed"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "scheduled_time": format_scheduled_time(self.scheduled_time),
            "status": self.status,
            "partitions_total": self.partitions_total,
            "partitions_done": self.partitions_done,
            "partitions_running": self.partitions_running,
            "applied": self.applied,
            "already_done": self.already_done,
            "failed": self.failed,
            "error": self.error,
        }


def _number(item: dict[str, Any], name: str) -> int:
    value = item.get(name)
    return int(value["N"]) if isinstance(value, dict) and "N" in value else 0


def _text(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return str(value["S"]) if isinstance(value, dict) and "S" in value else None


def _query_all(ledger: RunLedger, **request: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request["TableName"] = ledger.table_name
    while True:
        response = ledger.client.query(**request)
        items.extend(response.get("Items") or [])
        if "LastEvaluatedKey" not in response:
            return items
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def tick_progress(ledger: RunLedger, entry: dict[str, Any]) -> TickProgress:
    """A fanned-out tick entry's progress: a finished tick's summary, or the counters summed so far."""
    job, scheduled_time = str(_text(entry, "job")), str(_text(entry, "scheduled_time"))
    status = _text(entry, "status") or "started"
    summary = json.loads(_text(entry, "summary") or "{}") if status == STATUS_SUCCEEDED else {}
    running = 0
    if summary:
        counters = {name: int(summary.get(name, 0)) for name in COUNTERS}
    else:
        records = Finisher(ledger.client, ledger.table_name).records(job, scheduled_time)
        counters = {name: sum(_number(record, name) for record in records) for name in COUNTERS}
        running = sum(
            1
            for record in records
            if _text(record, "status") == STATUS_RUNNING
            and "#l" not in str(_text(record, "scheduled_time")).removeprefix(scheduled_time)
        )
    return TickProgress(
        job=job,
        scheduled_time=parse_scheduled_time(scheduled_time),
        status=status,
        partitions_total=_number(entry, "partitions_total"),
        partitions_done=_number(entry, "partitions_done"),
        partitions_running=running,
        error=_text(entry, "error"),
        **counters,
    )


def fanned_out_ticks(ledger: RunLedger, job: str, start: datetime, end: datetime) -> list[TickProgress]:
    """The job's ticks in [start, end) that fanned out, oldest first, each with its progress."""
    entries = _query_all(
        ledger,
        KeyConditionExpression="job = :job AND scheduled_time BETWEEN :start AND :end",
        FilterExpression="attribute_exists(partitions_total)",
        ExpressionAttributeValues={
            ":job": {"S": job},
            ":start": {"S": format_scheduled_time(start)},
            ":end": {"S": format_scheduled_time(end)},
        },
    )
    return [
        tick_progress(ledger, entry)
        for entry in entries
        if parse_scheduled_time(str(_text(entry, "scheduled_time"))) < end
    ]
