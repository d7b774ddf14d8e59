"""A job's pause as the run ledger keeps it, for every door that may run the job to respect.

`clockless pause <job>` disables the job's schedule and records who and why twice in the job's
ledger partition: a history item per change (`state#<ISO time with microseconds>`) and the
current state (sort key `state`), which one `GetItem` reads, so the HTTP trigger needs no `Query`.
Both sort after every tick's time (`2...` < `s`), so no tick query ever reads them, and neither
has a TTL. A run through the pause (an operator's explicit override) is one more history item,
action `pause-overridden`, naming the tick and who ran it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

STATE_PREFIX: Final = "state#"
CURRENT_STATE: Final = "state"
PAUSED: Final = "paused"
RESUMED: Final = "resumed"
PAUSE_OVERRIDDEN: Final = "pause-overridden"
MAX_REASON_LENGTH: Final = 1000


@dataclass(frozen=True, slots=True)
class Pause:
    """A job paused: since when (ISO, UTC), by whom, and why."""

    since: str
    by: str
    reason: str

    def describe(self, job: str) -> str:
        """`session-cleanup is paused (since 2026-12-06T18:00:00Z by ops@host: vendor API down)`."""
        return f"{job} is paused (since {self.since} by {self.by or 'someone'}: {self.reason or 'no reason given'})"

    def as_dict(self) -> dict[str, str]:
        return {"since": self.since, "by": self.by, "reason": self.reason}


def pause_of(item: Mapping[str, Any] | None) -> Pause | None:
    """The pause the current-state item records, or None when the job is not paused."""
    if not item or (item.get("status") or {}).get("S") != PAUSED:
        return None
    return Pause(
        since=str((item.get("changed_at") or {}).get("S", "")),
        by=str((item.get("changed_by") or {}).get("S", "")),
        reason=str((item.get("reason") or {}).get("S", "")),
    )


def history_key(moment: datetime) -> str:
    """A history item's sort key: microseconds keep two changes within a second apart, in order."""
    return STATE_PREFIX + moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def state_item(key: Mapping[str, Any], *, action: str, at: str, by: str, reason: str) -> dict[str, Any]:
    """A state item (history or current) under `key`: the action, when, who and why."""
    return {
        **key,
        "status": {"S": action},
        "changed_at": {"S": at},
        "changed_by": {"S": by},
        "reason": {"S": reason[:MAX_REASON_LENGTH] or "-"},
    }


def override_item(
    key: Mapping[str, Any], *, at: str, by: str, scheduled_time: str, door: str, pause: Pause
) -> dict[str, Any]:
    """The history item of a run through the pause: which tick, through which door, despite what."""
    reason = f"{door} ran {scheduled_time} despite the pause by {pause.by} ({pause.reason})"
    return {**state_item(key, action=PAUSE_OVERRIDDEN, at=at, by=by, reason=reason), "tick": {"S": scheduled_time}}
