"""Marking a partition done: the partition record and the tick's partitions_done in one
transaction, applied once however often it is sent."""

from __future__ import annotations

from clockless.fanout.records import LeaseLost, PartitionRecords
from clockless.fanout.writer import (
    DEFAULT_MAX_ATTEMPTS,
    RETRY_REASONS,
    TRANSIENT_ERRORS,
    WorkRetriesSpent,
    backoff_seconds,
)
from clockless.throttle import Clock, cancellation_codes, client_request_token


def mark_done(records: PartitionRecords, clock: Clock, *, already_done: int) -> None:
    """Partition done + the tick's partitions_done, once: throttles waited out by the records'
    client, conflicts resent (the tick entry is every partition's), answered from its token if
    it was applied."""
    dynamodb = records.client
    transact_items = records.done_transaction(already_done=already_done)
    token = client_request_token(transact_items)
    for attempt in range(DEFAULT_MAX_ATTEMPTS):
        try:
            dynamodb.transact_write_items(TransactItems=transact_items, ClientRequestToken=token)
            return
        except dynamodb.exceptions.TransactionCanceledException as error:
            codes = cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise LeaseLost(f"partition {records.partition} is not this worker's to finish: {codes}") from None
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                raise RuntimeError(
                    f"tick {records.job}@{records.scheduled_time} has no partitions_total in the ledger: "
                    "its coordinator did not claim it through the kit"
                ) from None
            if not any(code in RETRY_REASONS for code in codes):
                raise
        except dynamodb.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") not in TRANSIENT_ERRORS:
                raise
        clock.sleep(backoff_seconds(attempt))
    raise WorkRetriesSpent(f"marking partition {records.partition} done stayed in conflict")
