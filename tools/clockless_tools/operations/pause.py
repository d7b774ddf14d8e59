"""`clockless pause <job>` / `resume <job>`: the schedule's State set through UpdateSchedule (every
other field carried over), and who did it and why recorded in the ledger.

The ledger keeps each change as an item of the job's partition under the sort key
`state#<ISO time with microseconds>`: it sorts after every tick's time, so no tick query ever reads it, and it has
no TTL, so the history stays. `status` reads it to show a paused job and to not count the ticks of
a paused interval as missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from clockless import format_scheduled_time, parse_scheduled_time
from clockless.ledger import RunLedger
from clockless.pause import (
    CURRENT_STATE,
    PAUSE_OVERRIDDEN,
    PAUSED,
    RESUMED,
    STATE_PREFIX,
    Pause,
    history_key,
    override_item,
    state_item,
)
from clockless_tools.operations.targets import JobTarget, OperationError, ScheduleNotDeployed, require_job
from clockless_tools.template.model import Template
from clockless_tools.template.scheduler import DISABLED, ENABLED

# The flag that runs a paused job anyway (`run-now`, `backfill`), recorded in the ledger.
OVERRIDE_FLAG = "--override-pause"


@dataclass(frozen=True)
class StateChange:
    at: datetime
    action: str  # paused | resumed
    by: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"at": format_scheduled_time(self.at), "action": self.action, "by": self.by, "reason": self.reason}


@dataclass(frozen=True)
class PauseResult:
    job: str
    schedule: str
    action: str
    changed: bool  # False when the schedule already had that State
    change: StateChange
    alarms: list[str]  # dead-man alarms whose actions were turned off (pause) or on (resume)

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "schedule": self.schedule,
            "changed": self.changed,
            "alarms": self.alarms,
            **self.change.as_dict(),
        }


def state_history(ledger: RunLedger, job: str) -> list[StateChange]:
    """Every pause and resume of the job, oldest first."""
    request: dict[str, Any] = {
        "TableName": ledger.table_name,
        "KeyConditionExpression": "job = :job AND begins_with(scheduled_time, :prefix)",
        "ExpressionAttributeValues": {":job": {"S": job}, ":prefix": {"S": STATE_PREFIX}},
    }
    changes = []
    for page in ledger.client.get_paginator("query").paginate(**request):
        for item in page["Items"]:
            if item["status"]["S"] not in (PAUSED, RESUMED):
                continue  # a run through the pause (PAUSE_OVERRIDDEN) changes no state
            changes.append(
                StateChange(
                    at=_changed_at(item),
                    action=item["status"]["S"],
                    by=item.get("changed_by", {}).get("S", ""),
                    reason=item.get("reason", {}).get("S", ""),
                )
            )
    return changes


def _changed_at(item: dict[str, Any]) -> datetime:
    if "changed_at" in item:
        return parse_scheduled_time(item["changed_at"]["S"])
    # A record without the attribute: its key still holds the time.
    stamp = item["scheduled_time"]["S"].removeprefix(STATE_PREFIX)
    return parse_scheduled_time(stamp.split(".")[0].removesuffix("Z") + "Z")


def paused_intervals(history: list[StateChange]) -> list[tuple[datetime, datetime | None]]:
    """[paused at, resumed at) intervals; the last open (None) while the job is paused."""
    intervals: list[tuple[datetime, datetime | None]] = []
    since: datetime | None = None
    for change in history:
        if change.action == PAUSED and since is None:
            since = change.at
        elif change.action == RESUMED and since is not None:
            intervals.append((since, change.at))
            since = None
    if since is not None:
        intervals.append((since, None))
    return intervals


def job_pauses(target: JobTarget, job: str) -> tuple[list[StateChange], list[tuple[datetime, datetime | None]]]:
    """The job's recorded pauses, plus one the ledger does not know: a schedule found DISABLED (deployed
    so, or changed in the console) counts as paused since it was last modified."""
    history = state_history(target.ledger(), job)
    intervals = paused_intervals(history)
    if intervals and intervals[-1][1] is None:
        return history, intervals
    # No schedule to look at (not deployed, or a local server from before `local up` made them):
    # the ledger's account stands.
    try:
        schedule = target.schedule(job)
    except ScheduleNotDeployed:
        return history, intervals
    try:
        deployed = schedule.get()
    except schedule.client.exceptions.ResourceNotFoundException:
        return history, intervals
    if deployed.get("State") != DISABLED:
        return history, intervals
    since = deployed.get("LastModificationDate")
    at = since.astimezone(UTC) if isinstance(since, datetime) else datetime.min.replace(tzinfo=UTC)
    outside = StateChange(at=at, action=PAUSED, by="not through clockless", reason="the schedule's State is DISABLED")
    return [*history, outside], [*intervals, (at, None)]


def is_paused_at(intervals: list[tuple[datetime, datetime | None]], moment: datetime) -> bool:
    return any(start <= moment and (end is None or moment < end) for start, end in intervals)


def set_paused(
    target: JobTarget, template: Template, job: str, *, paused: bool, reason: str, now: datetime
) -> PauseResult:
    """Set the job's schedule State, then record the change; running it again changes nothing more."""
    require_job(template, job)
    if paused and not reason.strip():
        raise OperationError("say why with --reason (e.g. --reason 'vendor API down, INC-1234'): it goes in the ledger")
    schedule = target.schedule(job)
    cloudwatch, alarms = target.dead_man_alarms(job)
    if alarms and not paused:
        # Alarm first, schedule second: a failure in between leaves the alarm loud, never silenced.
        cloudwatch.enable_alarm_actions(AlarmNames=alarms)
    try:
        before = schedule.set_state(DISABLED if paused else ENABLED)
    except schedule.client.exceptions.ResourceNotFoundException:
        raise OperationError(
            f"{target.description} has no schedule {schedule.group}/{schedule.name} for {job!r}: run "
            "`clockless local up` again for the local runtime (it creates the schedules), or deploy the current "
            "template.yaml"
        ) from None
    if alarms and paused:
        cloudwatch.disable_alarm_actions(AlarmNames=alarms)
    action = PAUSED if paused else RESUMED
    ledger = target.ledger()
    history = state_history(ledger, job)
    currently_recorded = bool(history) and history[-1].action == PAUSED
    changed = before.get("State") != (DISABLED if paused else ENABLED)
    change = StateChange(at=now.replace(microsecond=0), action=action, by=target.operator(), reason=reason)
    at = format_scheduled_time(change.at)
    # Recorded when the schedule changed, or when an earlier run changed it but lost the record.
    if changed or currently_recorded != paused:
        ledger.client.put_item(
            TableName=ledger.table_name,
            Item=state_item(ledger.key(job, history_key(now)), action=action, at=at, by=change.by, reason=reason),
            ConditionExpression="attribute_not_exists(job)",
        )
    # The current state, which the HTTP trigger reads with one GetItem (clockless.pause).
    ledger.client.put_item(
        TableName=ledger.table_name,
        Item=state_item(ledger.key(job, CURRENT_STATE), action=action, at=at, by=change.by, reason=reason),
    )
    return PauseResult(
        job=job,
        schedule=f"{schedule.group}/{schedule.name}",
        action=action,
        changed=changed,
        change=change,
        alarms=alarms,
    )


class JobPaused(OperationError):
    """The job is paused and the caller did not override the pause; nothing ran."""

    def __init__(self, job: str, pause: Pause, what: str) -> None:
        super().__init__(
            f"{pause.describe(job)}: {what} refused; resume it with `clockless resume {job}`, or pass "
            f"{OVERRIDE_FLAG} to run it anyway (recorded in the ledger)"
        )
        self.pause = pause


def current_pause(target: JobTarget, job: str) -> Pause | None:
    """The job's pause now, as the ledger records it: the verdict the HTTP trigger reaches from the
    current-state item, read here from the history (which also holds pauses recorded before it). A
    schedule disabled outside clockless is `status`'s to show, not a pause anyone recorded."""
    history = state_history(target.ledger(), job)
    if not history or history[-1].action != PAUSED:
        return None
    last = history[-1]
    return Pause(since=format_scheduled_time(last.at), by=last.by, reason=last.reason)


def guard_pause(
    target: JobTarget, job: str, *, override: bool, what: str, ticks: list[datetime], now: datetime
) -> Pause | None:
    """Refuse (JobPaused) to run a paused job unless `override`; an override is recorded in the
    ledger's history of the job, one item per tick it runs. The pause overridden, or None."""
    pause = current_pause(target, job)
    if pause is None:
        return None
    if not override:
        raise JobPaused(job, pause, what)
    ledger = target.ledger()
    for index, tick in enumerate(ticks):
        # Each item its own microsecond: several ticks recorded in one second stay apart.
        key = ledger.key(job, history_key(now.replace(microsecond=(now.microsecond + index) % 1_000_000)))
        item = override_item(
            key,
            at=format_scheduled_time(now.replace(microsecond=0)),
            by=target.operator(),
            scheduled_time=format_scheduled_time(tick),
            door=what,
            pause=pause,
        )
        ledger.client.put_item(TableName=ledger.table_name, Item=item, ConditionExpression="attribute_not_exists(job)")
    return pause


def overrides(ledger: RunLedger, job: str) -> list[dict[str, str]]:
    """The runs through the job's pauses the ledger records (tick, by, reason), oldest first."""
    response = ledger.client.query(
        TableName=ledger.table_name,
        KeyConditionExpression="job = :job AND begins_with(scheduled_time, :prefix)",
        ExpressionAttributeValues={":job": {"S": job}, ":prefix": {"S": STATE_PREFIX}},
    )
    return [
        {"tick": item["tick"]["S"], "by": item["changed_by"]["S"], "reason": item["reason"]["S"]}
        for item in response.get("Items") or []
        if item["status"]["S"] == PAUSE_OVERRIDDEN
    ]
