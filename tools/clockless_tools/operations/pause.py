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
from clockless_tools.operations.targets import JobTarget, OperationError, ScheduleNotDeployed, require_job
from clockless_tools.template.model import Template
from clockless_tools.template.scheduler import DISABLED, ENABLED

STATE_PREFIX = "state#"
PAUSED, RESUMED = "paused", "resumed"


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
    # Microseconds in the key keep two changes within a second apart (and in order).
    key = STATE_PREFIX + now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # Recorded when the schedule changed, or when an earlier run changed it but lost the record.
    if changed or currently_recorded != paused:
        ledger.client.put_item(
            TableName=ledger.table_name,
            Item={
                **ledger.key(job, key),
                "status": {"S": action},
                "changed_at": {"S": format_scheduled_time(change.at)},
                "changed_by": {"S": change.by},
                "reason": {"S": reason[:1000] or "-"},
            },
            ConditionExpression="attribute_not_exists(job)",
        )
    return PauseResult(
        job=job,
        schedule=f"{schedule.group}/{schedule.name}",
        action=action,
        changed=changed,
        change=change,
        alarms=alarms,
    )
