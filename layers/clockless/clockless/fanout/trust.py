"""What a work message may claim, checked against the clock and the ledger before it writes.

A message on the work queue is only a request: anyone who can send to the queue (a bug, an
operator's redrive, a test) can ask for any tick. A worker acts only for

- a tick that is due (not in the future by more than the clock-skew allowance `Tick.from_event`
  grants), checked against the worker's clock before any request;
- a tick the ledger shows claimed by a fan-out coordinator with this worker's partitions
  (`partitions_total`, written only by the coordinator's claim), checked by a `ConditionCheck`
  in the transaction that creates the partition's record, so the first run of a partition pays
  no extra request for it; a partition record exists only once that check passed, so a later run
  (a continuation, a redelivery) that finds it trusts it;
- replayed items the partition record lists as failed (or as already replayed: a duplicate).

Anything else is an `UntrustedMessageError`, raised before anything is written. The worker logs
it as an error naming why, and reports the message failed: each receive costs one request and
changes nothing, and after the work queue's maxReceiveCount SQS moves it to the work DLQ (so a
refusal that was only clock skew passes on a later receive instead of being dead-lettered).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clockless.errors import ClocklessError
from clockless.state import TickEntry
from clockless.tick import MalformedTickError, reject_future, utc_now

if TYPE_CHECKING:
    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.store import PartitionStore


class UntrustedMessageError(ClocklessError, ValueError):
    """A well-formed work message the ledger or the clock does not back; nothing was written.
    `more_partitions`: the tick was fanned out into more partitions than this worker runs (a shard
    count lowered between the coordinator and the worker), so the tick has this partition and is
    named on the message's last receive (clockless.fanout.unreadable)."""

    def __init__(self, tick_key: str, partition: str, reason: str, *, more_partitions: bool = False) -> None:
        super().__init__(f"work message for {tick_key} partition {partition} refused: {reason}")
        self.reason = reason
        self.more_partitions = more_partitions


def reject_future_tick(tick_key: str, partition: str, scheduled_time: datetime, *, now: datetime | None = None) -> None:
    """A message for a tick that is not due yet is refused, as its tick would be."""
    try:
        reject_future(scheduled_time, now=utc_now() if now is None else now)
    except MalformedTickError as error:
        raise UntrustedMessageError(tick_key, partition, error.problem) from None


def fanned_out_into_more(entry: Mapping[str, Any] | None, partitions_total: int) -> bool:
    """The tick entry (as the failed check returned it) was fanned out into more partitions than
    `partitions_total`."""
    total = TickEntry.from_item(entry).partitions_total
    return total is not None and total > partitions_total


def why_not_claimed(entry: Mapping[str, Any] | None, partitions_total: int, least: int = 1) -> str:
    """Why the tick entry (as the failed check returned it) does not back the message."""
    tick = TickEntry.from_item(entry)
    if not tick.exists:
        return "the ledger has no entry for this tick: no coordinator claimed it"
    status = tick.status_text or "?"
    total = tick.partitions_total
    if total is None:
        return f"the ledger's entry (status {status}) was not claimed by a fan-out coordinator: no partitions_total"
    if total > partitions_total:
        return (
            f"the tick was fanned out into {total} partitions, more than the {partitions_total} this worker runs: "
            "a shard count lowered without its migration (docs/fan-out.md#changing-a-jobs-shard-count)"
        )
    if total < least:
        return f"the tick was fanned out into {total} partitions, which do not include this one (number {least})"
    return f"the tick was fanned out into {total} partitions, but this worker runs {partitions_total}"


def never_failed(keys: Iterable[str], failed: frozenset[str], replayed: frozenset[str]) -> list[str]:
    """Replayed item keys the partition never listed as failed (nor replayed already)."""
    return sorted(key for key in keys if key not in failed and key not in replayed)


def replayable_keys(records: PartitionStore, message: WorkMessage, keys: list[str]) -> frozenset[str]:
    """The replayed keys still listed failed (one consistent GetItem). A key never listed failed
    (nor replayed already, a duplicate replay) is an UntrustedMessageError: nothing is written."""
    listed = records.failed_keys()
    if listed is None:
        raise UntrustedMessageError(message.tick_key, message.partition, "replayed items of a partition never run")
    strangers = never_failed(keys, listed.failed, listed.replayed)
    if strangers:
        shown = ", ".join(strangers[:5]) + (f" and {len(strangers) - 5} more" if len(strangers) > 5 else "")
        raise UntrustedMessageError(
            message.tick_key, message.partition, f"replayed items that never failed in it: {shown}"
        )
    return listed.failed
