"""A night with bad rows (`clockless simulate --bad-rows`): every job's demo plants a few rows its
ticks find due but cannot use (its `bad_rows` hook: a row that does not decode, a value the domain
refuses), among the good ones, before the night; the night runs as the normal one does.

The judge, per job, beside exactly once for the good items (the tables against the reference
replay, which meets the same bad rows and so leaves them exactly where the simulation must):
- every planted row is named among the failed items of the job's ledger entries;
- a job that fans out also holds each of them in its work dead-letter queue (an `items` message);
- every tick whose entry lists failed items ended `failed`, or `succeeded` within the job's declared
  tolerance (the kit decides which), and no tick of the job is left `started`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from clockless import format_scheduled_time
from clockless.fanout.messages import KIND_ITEMS
from clockless.items import ItemsFailedError
from clockless.ledger import STATUS_FAILED, STATUS_STARTED, STATUS_SUCCEEDED, LedgerEntry
from clockless_tools.simulate.snapshot import Snapshot
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template

NO_HOOK: Final = "its demo.py has no bad_rows hook, so no bad row was planted"


@dataclass
class BadRowsReport:
    """What became of one job's planted rows and the ticks that met them."""

    planted: list[str] | None = None  # None: the job's demo cannot plant bad rows
    fans_out: bool = False
    in_ledger: list[str] = field(default_factory=list)
    in_dead_letters: list[str] = field(default_factory=list)
    ticks_failed: int = 0
    ticks_tolerated: int = 0
    ticks_started: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def job_entries(snapshot: Snapshot, template: Template, job: str) -> list[LedgerEntry]:
    """The job's ledger entries in the snapshot."""
    ledgers = template.tables_of_kind("ledger")
    items = snapshot.get(LocalNames().table_name(ledgers[0]), []) if ledgers else []
    return [LedgerEntry.from_item(item) for item in items if item.get("job", {}).get("S") == job]


def dead_letter_keys(bodies: Iterable[str], job: str) -> list[str]:
    """The item keys the job's `items` messages name among work dead-letter queues' message bodies."""
    keys: list[str] = []
    for body in bodies:
        try:
            data = json.loads(body)
        except ValueError:
            continue  # not a work message: nothing it could name
        if not isinstance(data, dict) or data.get("kind") != KIND_ITEMS or data.get("job") != job:
            continue
        named = [str(item["key"]) for item in data.get("items") or [] if isinstance(item, dict) and "key" in item]
        keys.extend(dict.fromkeys([*named, *(str(key) for key in data.get("keys") or [])]))
    return keys


def judge_bad_rows(
    job: str,
    planted: Sequence[str] | None,
    entries: Sequence[LedgerEntry],
    dead_letters: Sequence[str],
    *,
    fans_out: bool,
    ticks_delivered: int,
) -> BadRowsReport:
    """Every planted row reported where an operator looks, every tick that met one settled. A job
    with no tick in the range met no row: nothing to report, and the report says 0 of them."""
    report = BadRowsReport(planted=None if planted is None else list(planted), fans_out=fans_out)
    if planted is None:
        report.problems.append(f"{job}: {NO_HOOK}")
        return report
    if not ticks_delivered:
        return report
    failed_keys = {failure.key for entry in entries for failure in entry.failures}
    report.in_ledger = [key for key in planted if key in failed_keys]
    report.in_dead_letters = [key for key in planted if key in set(dead_letters)]
    for key in planted:
        if key not in failed_keys:
            report.problems.append(f"{job}: bad row {key} is named in no ledger entry's failed items")
        if fans_out and key not in report.in_dead_letters:
            report.problems.append(f"{job}: bad row {key} is not in the work dead-letter queue")
    for entry in sorted(entries, key=lambda e: e.scheduled_time):
        moment = format_scheduled_time(entry.scheduled_time)
        when = f"{job}@{moment}"
        if entry.status == STATUS_STARTED:
            report.ticks_started.append(moment)
            report.problems.append(f"{when}: left started, never settled")
        elif entry.failed_items and entry.status == STATUS_FAILED:
            report.ticks_failed += 1
        elif entry.failed_items and entry.status == STATUS_SUCCEEDED:
            report.ticks_tolerated += 1
        elif entry.failed_items:
            report.problems.append(f"{when}: {entry.failed_items} items failed, yet the tick is {entry.status}")
    return report


def distinct_letters(bodies: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Per work queue, the distinct letters in its dead-letter queue. A worker that crashed after
    sending a partition's failed items, or a message handed out twice, sends the same letter again
    (the same tick, partition and keys; only its attempts differ): replaying it twice changes
    nothing, so a copy is not a letter of its own. Anything else that is not a work message counts
    as it is."""
    counts: dict[str, int] = {}
    for queue, found in bodies.items():
        letters: set[object] = set()
        for index, body in enumerate(found):
            try:
                data = json.loads(body)
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("kind") == KIND_ITEMS:
                keys = sorted({str(item.get("key")) for item in data.get("items") or [] if isinstance(item, dict)})
                letters.add((data.get("job"), data.get("scheduled_time"), data.get("partition"), tuple(keys)))
            else:
                letters.add(index)
        counts[queue] = len(letters)
    return counts


def settled_on_failed_items(entries: Iterable[LedgerEntry], job: str) -> set[str]:
    """Tick keys (`job@time`) the ledger records `failed` because items failed: a job without fan-out
    answers those deliveries with ItemsFailedError, its good items applied. On a night with bad rows
    that tick took effect as far as it can; the judge above says whether it named the right rows."""
    return {
        f"{job}@{format_scheduled_time(entry.scheduled_time)}"
        for entry in entries
        if entry.status == STATUS_FAILED and entry.failures
    }


def refused_for_items(error: str | None) -> bool:
    """A delivery that failed because its tick's items failed (not a fault of the run itself)."""
    return (error or "").startswith(f"{ItemsFailedError.__name__}:")


def planted_summary(planted: Mapping[str, Sequence[str] | None]) -> str:
    """One line: how many bad rows each job's demo planted."""
    return "; ".join(
        f"{job}: {'no bad_rows hook' if keys is None else f'{len(keys)} bad rows'}" for job, keys in planted.items()
    )
