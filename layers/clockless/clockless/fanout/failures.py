"""A partition's rows turned into the writer's entries, and its failed items recorded.

Rows become entries one at a time (a row that does not decode, or whose writes cannot be worked
out, fails alone), and each failed item is recorded where an operator looks: the work DLQ (an
`items` message that `clockless work redrive` sends back for replay), one ERROR line naming job,
scheduled time, table, key and field, and a note on the partition record (the first MAX_LISTED,
which the finisher copies to the tick's ledger entry)."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from clockless.fanout.keys import FAILURE_NOTES
from clockless.fanout.writer import Entry
from clockless.items import (
    MAX_LISTED,
    REASON_DECODE,
    REASON_DOMAIN,
    FailedItem,
    failure_of,
    is_transient,
    key_of,
    log_failure,
)

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.queue import DeadLetters
    from clockless.fanout.store import PartitionStore
    from clockless.fanout.work import PartitionWork

OUTSIDE_RANGE = "its index key sorts outside the range of keys the job reads: no tick would ever find it"


def entries_of(
    work: PartitionWork[Any],
    rows: Iterable[Any],
    params: Mapping[str, Any],
    tick_key: str,
    *,
    skip: Collection[str] = (),
    only: Collection[str] | None = None,
) -> list[Entry]:
    """One entry per row (its key not in `skip`, and in `only` when given): its writes, or the
    failure that stopped it before any write. An infrastructure error (`is_transient`) is raised:
    it fails the run, which its redelivery resumes, not the item."""
    entries: list[Entry] = []
    for index, row in enumerate(rows):
        key = key_of(work.row_key, row, index)
        if key in skip or (only is not None and key not in only):
            continue
        try:
            item = work.item_of(row)
        except Exception as error:
            if is_transient(error):
                raise
            entries.append(Entry(key, [], None, failure_of(key, REASON_DECODE, error)))
            continue
        try:
            actions = work.writes(item, params, tick_key)
        except Exception as error:
            if is_transient(error):
                raise
            entries.append(Entry(key, [], item, failure_of(key, REASON_DOMAIN, error)))
            continue
        entries.append(Entry(key, actions, item))
    return entries


def outside_entries(work: PartitionWork[Any], rows: Iterable[Any], *, skip: Collection[str] = ()) -> list[Entry]:
    """One failed entry per row whose index key sorts outside the job's key range (`ReadsOutside`):
    why its row does not decode, or, if it does, that `read` can never reach it. Never applied."""
    entries: list[Entry] = []
    for index, row in enumerate(rows):
        key = key_of(work.row_key, row, index)
        if key in skip:
            continue
        try:
            work.item_of(row)
        except Exception as error:
            if is_transient(error):
                raise
            entries.append(Entry(key, [], None, failure_of(key, REASON_DECODE, error)))
            continue
        problem = FailedItem(key, REASON_DECODE, OUTSIDE_RANGE)
        entries.append(Entry(key, [], None, problem))
    return entries


def note_failures(records: PartitionStore, failures: list[FailedItem]) -> None:
    """The failures on the partition record while it lists fewer than MAX_LISTED (a full list
    refuses the write: the tick's count still has them all). Only ever sent when items failed."""
    notes = [{"S": json.dumps(f.as_record(), sort_keys=True, separators=(",", ":"))} for f in failures]
    records.note_failures(notes, max_listed=MAX_LISTED)


def failures_noted(record: Mapping[str, Any]) -> list[FailedItem]:
    """The failures a partition record notes of items still failed (not replayed since), oldest first."""
    still_failed = set((record.get("failed_items") or {}).get("SS", []))
    failures = []
    for note in (record.get(FAILURE_NOTES) or {}).get("L", []):
        try:
            data = json.loads(note.get("S", ""))
        except ValueError:
            continue
        if isinstance(data, Mapping) and data.get("key") in still_failed:
            failures.append(FailedItem.from_record(data))
    return failures


class FailureRecorder:
    """The writer's failure sink for one partition run or replay: DLQ, ERROR lines, notes."""

    def __init__(
        self,
        message: WorkMessage,
        work: PartitionWork[Any],
        dead_letters: DeadLetters,
        records: PartitionStore,
        logger: Logger,
    ) -> None:
        self.message = message
        self.work = work
        self.dead_letters = dead_letters
        self.records = records
        self.logger = logger

    def __call__(self, entries: list[Entry], reason: str) -> None:
        # To the DLQ first: a crash after it sends the copy again (replaying it changes nothing).
        self.dead_letters.send(self.message, self.work.encode, entries, reason)
        failures = [entry.failure or FailedItem(entry.key, "write", reason) for entry in entries]
        for failure in failures:
            # Lanes log from their own threads, which do not carry the run's log keys: name it all.
            log_failure(
                self.logger,
                failure,
                "item failed; the rest of its partition goes on",
                table=_table(self.work),
                correlation_id=self.message.tick_key,
                job=self.message.job,
                scheduled_time=self.message.time_text,
                partition=self.message.partition,
            )
        try:
            note_failures(self.records, failures)
        except Exception:  # the DLQ and the count have them; the note is for reading
            self.logger.warning("could not note the failed items on the partition record", exc_info=True)


def _table(work: PartitionWork[Any]) -> str | None:
    try:
        return str(work.table)
    except Exception:
        return None
