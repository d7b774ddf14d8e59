"""Overlap: what a job does with a tick that arrives while an earlier tick is still running.

Declared once per job, `ScheduledJob("nightly", overlap="skip")`, as Temporal's schedule
overlap policies and Kubernetes' CronJob `concurrencyPolicy` let users say:

- `run-both` (the default, and the behaviour before this was declared): the new tick runs beside
  the earlier one; their writes are conditional, so both take effect once.
- `skip`: the new tick is recorded in the ledger `skipped` with the reason
  `overlap: <earlier tick> still running`, and does nothing.
- `buffer` (fan-out jobs: the finisher starts it): the new tick is recorded `buffered`
  (`overlap: <earlier> still running; starts when it finishes`), and when the earlier tick is
  settled its finisher starts it. One tick is buffered at most: a tick arriving while one is
  buffered is skipped (`overlap: <buffered tick> already buffered`), as Temporal's BUFFER_ONE.

"Still running": the latest earlier tick the ledger holds (skipped ones aside) is `started` and
started less than `running_at_most` ago (default 6 h: a fanned-out tick's partitions are
retried by SQS for 5 x 30 min at most; a tick started longer ago is dead, and the dead-man alarm
and the DLQs speak for it; it must not hold every later tick back). The hold is written in one
transaction with a check that the earlier tick is still `started` (or still `buffered`), so a
tick that settles at the same moment either sees the hold (and starts a buffered tick) or makes
the hold fail (and the new tick runs). A tick once held stays held: a later delivery of it (a
redelivery, a late retry, after the earlier tick settled) is answered from its ledger entry, and a
buffered tick its earlier tick's finisher started is not started again by the scheduler's copy.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from clockless.errors import DeclarationError
from clockless.ledger import RunLedger, iso_now
from clockless.state import CHECK_EARLIER, HOLD, TickEntry, TickStatus
from clockless.throttle import cancellation_reasons
from clockless.tick import Tick, Trigger, format_scheduled_time, parse_scheduled_time

STATUS_BUFFERED: Final = TickStatus.BUFFERED.value
# On a buffered tick the tick reaper settled `failed` (its start never ran: clockless.reaper): the
# settled tick it was buffered behind, so a redriven start message may still start it.
START_FAILED: Final = "start_failed"
DEFAULT_RUNNING_AT_MOST: Final = timedelta(hours=6)
# How many earlier entries one look reads: skipped ticks are passed over to find the one running.
LOOK_BACK: Final = 10
OUTCOME_SKIPPED: Final = TickStatus.SKIPPED.value
OUTCOME_BUFFERED: Final = TickStatus.BUFFERED.value


class Overlap(enum.StrEnum):
    RUN_BOTH = "run-both"
    SKIP = "skip"
    BUFFER = "buffer"


def parse_overlap(value: object, *, job: str) -> Overlap:
    if isinstance(value, Overlap):
        return value
    if isinstance(value, str) and value in Overlap._value2member_map_:
        return Overlap(value)
    allowed = ", ".join(repr(p.value) for p in Overlap)
    raise DeclarationError(f"ScheduledJob {job!r}: overlap must be one of {allowed}, got {value!r}")


@dataclass(frozen=True, slots=True)
class Earlier:
    """The earlier tick the new one overlaps: its scheduled time and status (started or buffered)."""

    scheduled_time: str
    status: str


@dataclass(frozen=True, slots=True)
class Held:
    """What the ledger says of a tick held back by overlap."""

    status: str
    reason: str
    overlap_with: str

    def result(self, tick: Tick) -> dict[str, Any]:
        outcome = OUTCOME_BUFFERED if self.status == STATUS_BUFFERED else OUTCOME_SKIPPED
        return {**tick.identity, "outcome": outcome, "reason": self.reason, "overlap_with": self.overlap_with}


class OverlapGuard:
    """The ledger reads and writes of one job's overlap policy."""

    def __init__(self, ledger: RunLedger, policy: Overlap, *, running_at_most: timedelta) -> None:
        self.ledger = ledger
        self.client = ledger.client
        self.policy = policy
        self.running_at_most = running_at_most

    def earlier_running(self, tick: Tick, now: datetime) -> Earlier | Held | None:
        """The earlier tick still running (or buffered), if any, or this tick's own hold when the
        ledger already holds it back: one consistent Query. A skipped tick delivered again after
        the earlier one settled (a redelivery, a late retry) stays skipped rather than running."""
        own = format_scheduled_time(tick.scheduled_time)
        response = self.client.query(
            TableName=self.ledger.table_name,
            KeyConditionExpression="job = :job AND scheduled_time <= :until",
            ExpressionAttributeValues={":job": {"S": tick.job}, ":until": {"S": own}},
            ScanIndexForward=False,
            Limit=LOOK_BACK + 1,
            ConsistentRead=True,
        )
        for item in response.get("Items") or []:
            entry = TickEntry.from_item(item)
            scheduled_time = str(entry.text("scheduled_time"))
            if scheduled_time == own:
                held = _already_held(entry)
                if held is not None:
                    return held
                continue  # its own entry (started, failed, ...): the claim decides
            status = entry.status
            if status is TickStatus.SKIPPED:
                continue
            if status is TickStatus.BUFFERED:
                return Earlier(scheduled_time, status.value)
            if status is not TickStatus.STARTED:
                return None
            started = entry.started_at
            if started is None or now - parse_scheduled_time(started) > self.running_at_most:
                return None
            return Earlier(scheduled_time, status.value)
        return None

    def hold(self, tick: Tick, earlier: Earlier) -> Held | None:
        """Record `tick` held back behind `earlier` (skipped, or buffered), unless the earlier tick
        settled meanwhile (None: run it). A tick the ledger already holds is answered as held."""
        other = earlier.scheduled_time
        if self.policy is Overlap.BUFFER and earlier.status == TickStatus.STARTED:
            # One tick buffered behind a running one, whatever order they arrive in: a late tick
            # whose later neighbour is already buffered behind the same tick is skipped, as it
            # would have buffered that neighbour out had it come on time. (Two buffered behind one
            # tick would leave the later for ever: the finisher starts the tick buffered behind
            # the one it finishes.)
            after = buffered_after(self.ledger, tick.job, other)
            if after is not None and after.scheduled_time != tick.scheduled_time:
                earlier = Earlier(format_scheduled_time(after.scheduled_time), STATUS_BUFFERED)
                other = earlier.scheduled_time
        if self.policy is Overlap.BUFFER and earlier.status == TickStatus.STARTED:
            held = Held(STATUS_BUFFERED, f"overlap: {other} still running; starts when it finishes", other)
        elif earlier.status == STATUS_BUFFERED:
            held = Held(TickStatus.SKIPPED.value, f"overlap: {other} already buffered", other)
        else:
            held = Held(TickStatus.SKIPPED.value, f"overlap: {other} still running", other)
        time_text = format_scheduled_time(tick.scheduled_time)
        item: dict[str, Any] = {
            **self.ledger.key(tick.job, time_text),
            "status": {"S": held.status},
            "reason": {"S": held.reason},
            "overlap_with": {"S": earlier.scheduled_time},
            "attempts": {"N": "0"},
            "trigger": {"S": tick.trigger.value},
            "finished_at": {"S": iso_now()},
            # time.time(): the simulator's clock (time-machine) moves it
            "expires_at": {"N": str(int(time.time()) + self.ledger.retention_seconds)},
        }
        try:
            self.client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self.ledger.table_name,
                            "Item": item,
                            "ConditionExpression": HOLD.render(),
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    {
                        "ConditionCheck": {
                            "TableName": self.ledger.table_name,
                            "Key": self.ledger.key(tick.job, earlier.scheduled_time),
                            "ConditionExpression": CHECK_EARLIER.render(),
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": {":status": {"S": earlier.status}},
                        }
                    },
                ]
            )
        except self.client.exceptions.TransactionCanceledException as error:
            mine, theirs = cancellation_reasons(error, 2)[:2]
            if mine.get("Code") == "ConditionalCheckFailed":
                return _already_held(TickEntry.from_item(mine.get("Item")))
            if theirs.get("Code") == "ConditionalCheckFailed":
                return None  # the earlier tick settled meanwhile: this one runs
            raise
        return held


def buffered_after(ledger: RunLedger, job: str, scheduled_time: str) -> Tick | None:
    """The tick buffered behind `scheduled_time` (at most one), as its start must deliver it."""
    response = ledger.client.query(
        TableName=ledger.table_name,
        KeyConditionExpression="job = :job AND scheduled_time > :after",
        ExpressionAttributeValues={":job": {"S": job}, ":after": {"S": scheduled_time}},
        Limit=LOOK_BACK,
        ConsistentRead=True,
    )
    for item in response.get("Items") or []:
        entry = TickEntry.from_item(item)
        if entry.status is TickStatus.BUFFERED and entry.overlap_with == scheduled_time:
            return Tick(
                job=job,
                scheduled_time=parse_scheduled_time(str(entry.text("scheduled_time"))),
                schedule_arn=None,
                attempt=1,
                execution_id=None,
                trigger=Trigger(entry.text("trigger") or Trigger.SCHEDULE.value),
            )
    return None


def _already_held(entry: TickEntry) -> Held | None:
    status = entry.status
    if status in (TickStatus.SKIPPED, TickStatus.BUFFERED) and entry.overlap_with:
        return Held(str(status), entry.text("reason") or "", entry.overlap_with)
    released_by = entry.released_by
    if released_by:
        # A buffered tick its earlier tick's finisher has started: that start is its one run.
        return Held(STATUS_BUFFERED, f"overlap: buffered behind {released_by}; started when it finished", released_by)
    return None  # the tick has an entry of its own (it ran, or an operator skipped it): the claim decides
