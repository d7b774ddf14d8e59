"""A partition message that failed: back in seconds, and on its last receive recorded in the ledger.

SQS shows a message a worker failed again only after the work queue's visibility timeout (1,800 s,
6 x the worker's Timeout, so a live worker is never overtaken). A run that *raised* is over, so
the worker shortens its wait itself with `ChangeMessageVisibility`: 10 s after the first failure,
doubling per receive, capped at MAX_BACKOFF_SECONDS; a partition that fails once is retried within
a minute. A worker that died (timeout, crash) cannot: its message waits the visibility timeout; so does one
that could not release its partition's lease (the redelivery would find it held).

A run that raises on its message's last receive (`receives >= WORK_MAX_RECEIVES`, the queue's
maxReceiveCount) adds its partition to the tick entry's `partitions_exhausted`, so the finisher
settles the tick `failed` naming the partition instead of leaving it `started` for ever; the
message goes on to the work DLQ, and when `clockless work redrive` runs it to the end, the done
transaction takes the partition out of the set and the tick settles again.
"""

from __future__ import annotations

from typing import Any, Final

from clockless.fanout.records import STATUS_DONE, partition_key, tick_key
from clockless.throttle import cancellation_codes

FIRST_BACKOFF_SECONDS: Final = 10
MAX_BACKOFF_SECONDS: Final = 300
EXHAUSTED: Final = "partitions_exhausted"


def backoff_seconds(receives: int) -> int:
    """How long a message failed on its `receives`-th receive stays hidden: 10 s, 20 s, 40 s, ... capped."""
    return int(min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** max(0, min(receives, 16) - 1)))


_LEASE_HELD: Final = "clockless_lease_held"


def lease_still_held(error: BaseException) -> None:
    """The failed run could not release its partition's lease: its message must wait the whole
    visibility timeout (longer than any lease), or its redelivery would find the lease held and end."""
    setattr(error, _LEASE_HELD, True)


def held_lease(error: BaseException) -> bool:
    return bool(getattr(error, _LEASE_HELD, False))


def come_back_soon(sqs: Any, queue_url: str, receipt_handle: str, receives: int) -> int:
    """The failed message visible again after the backoff instead of the visibility timeout."""
    delay = backoff_seconds(receives)
    sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=delay)
    return delay


def exhausted_transaction(
    table: str, job: str, scheduled_time: str, partition: str, *, unless: str = "", values: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The partition added to its tick entry's `partitions_exhausted` (a set: once however often),
    only while the partition is not done and (`unless`, on the partition record with `values`)
    whatever else the caller asks of it; the tick entry must be a fan-out coordinator's."""
    condition = "(attribute_not_exists(#status) OR #status <> :done)" + (f" AND {unless}" if unless else "")
    return [
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": partition_key(job, scheduled_time, partition),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {":done": {"S": STATUS_DONE}, **(values or {})},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": tick_key(job, scheduled_time),
                "UpdateExpression": f"ADD {EXHAUSTED} :partition",
                "ConditionExpression": "attribute_exists(partitions_total)",
                "ExpressionAttributeValues": {":partition": {"SS": [partition]}},
            }
        },
    ]


def record_exhausted(client: Any, table: str, job: str, scheduled_time: str, partition: str) -> bool:
    """The partition named on its tick entry as having failed every receive, only while the
    partition is not done (a run that failed after marking it done, in its finisher, leaves
    nothing undone). False: it was done."""
    try:
        client.transact_write_items(TransactItems=exhausted_transaction(table, job, scheduled_time, partition))
    except client.exceptions.TransactionCanceledException as error:
        if cancellation_codes(error)[:1] == ["ConditionalCheckFailed"]:
            return False
        raise
    return True


def exhausted_of(entry: dict[str, Any]) -> list[str]:
    return sorted((entry.get(EXHAUSTED) or {}).get("SS", []))
