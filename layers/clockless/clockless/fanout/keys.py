"""Where a fanned-out tick's records live in the ledger table, and what their attributes are called.

- the tick entry `<job>` / `<ts>` (the ledger's own), with `partitions_total`, `partitions_done`
  and `partitions_exhausted` beside the tick's status;
- partition record `<job>#work` / `<ts>#p<partition>`: status (`clockless.state`), cursor, lease,
  hops, failed_items, the counters of replayed items, and what an operator reads about its runs
  (`receives`, `last_error`, `throttle_continuations`);
- lane record `<job>#work` / `<ts>#p<partition>#l<lane>`: applied and already_done, written only
  by the transactions of one lane of one worker, so concurrent lanes never touch one record.

The writes are `clockless.fanout.store`'s; the readers (the finisher, the operator's tools) read
them through `clockless.state`'s parsers.
"""

from __future__ import annotations

from typing import Any, Final

WORK_SUFFIX: Final = "#work"
COUNTERS: Final = ("applied", "already_done", "failed")
# What a worker records for operators (docs/fan-out.md, "The records").
RECEIVES: Final = "receives"
LAST_ERROR: Final = "last_error"
THROTTLE_CONTINUATIONS: Final = "throttle_continuations"
# On the tick entry from the update that says `succeeded` until a worker has emitted TickSucceeded.
METRIC_PENDING: Final = "metric_pending"
# On the partition record: the first failures of its items, as JSON texts (attempts: one note each).
FAILURE_NOTES: Final = "failure_notes"
# On the tick entry: the partitions whose message failed every receive (clockless.fanout.redelivery).
EXHAUSTED: Final = "partitions_exhausted"
# On a tick entry the tick reaper settled: when (kept when a late `done` settles it again, for operators).
REAPED_AT: Final = "reaped_at"


def work_job(job: str) -> str:
    return f"{job}{WORK_SUFFIX}"


def partition_key(job: str, scheduled_time: str, partition: str) -> dict[str, Any]:
    return {"job": {"S": work_job(job)}, "scheduled_time": {"S": f"{scheduled_time}#p{partition}"}}


def lane_key(job: str, scheduled_time: str, partition: str, lane: int) -> dict[str, Any]:
    return {"job": {"S": work_job(job)}, "scheduled_time": {"S": f"{scheduled_time}#p{partition}#l{lane}"}}


def tick_key(job: str, scheduled_time: str) -> dict[str, Any]:
    return {"job": {"S": job}, "scheduled_time": {"S": scheduled_time}}
