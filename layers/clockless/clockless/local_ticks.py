"""The dead-man of each zone of a job with a local time (LOCAL_TIME in OPERATING_TIME_ZONES).

Such a job's cron fires at every UTC hour its local time can fall on, and its ticks are the instants
that are that time in at least one zone (clockless.schedule.local_clock). The job's dead-man alarm
sees its scheduled successes as one stream: New York's 07:30 succeeding every day keeps it quiet
while Chicago's never runs. So every delivery of such a job (a tick's or one dropped as `not_a_tick`)
also asks, zone by zone, whether the zone's latest local tick due by now (its scheduled time at
least the job's grace ago) succeeded, and names each zone whose did not.

The due tick is the zone's own local instant, found on its clock, so a day of 23 or 25 hours across
a change of offset moves it with the clock: no allowance of a day and an hour is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from clockless.schedule.local_clock import LocalClock

METRIC_LOCAL_TICK_MISSED: Final = "LocalTickMissed"
# The job's latest succeeded ticks read per delivery, newest first, in one Query. The window from a
# zone's due tick to now is under two days (a gap of at most 25 h, plus a grace under 23 h), and the
# cron's instants keep one minute of an hour, so at most 48 scheduled ticks fall in it: a zone's
# success since its due tick is among them. 48 keys of the KEYS_ONLY index are one page.
SUCCESSES_READ: Final = 48
# The longest grace that bound holds for (LOCAL_TICK_GRACE_MINUTES).
MAX_GRACE: Final = timedelta(hours=23)


@dataclass(frozen=True, slots=True)
class MissedLocalTick:
    """A zone whose local tick `due` has not succeeded by its grace; `last_seen` is the zone's latest
    succeeded tick among those read (None: none of them served the zone)."""

    zone: str
    due: datetime
    last_seen: datetime | None


def missed_local_ticks(
    clock: LocalClock,
    now: datetime,
    grace: timedelta,
    succeeded: Sequence[datetime],
    *,
    all_read: bool,
) -> tuple[MissedLocalTick, ...]:
    """The zones of `clock` whose latest local tick due by `now - grace` did not succeed.

    `succeeded`: the scheduled times of the job's latest succeeded ticks up to `now` (any order);
    `all_read`: they are all the job has (the read was not cut at its limit). A zone is reported only
    when the job was already succeeding before the zone's due tick (a success older than it, read or
    cut off): a job that never succeeded is its own dead-man alarm's, and a zone whose due tick came
    before the job's first success may have been due before the job was deployed."""
    missed = []
    for zone in clock.zones:
        due = clock.latest_in(zone, now - grace)
        if due is None:
            continue
        served = [moment for moment in succeeded if zone in clock.zones_at(moment)]
        if any(moment >= due for moment in served):
            continue
        running_before = bool(succeeded) and (not all_read or min(succeeded) < due)
        if running_before:
            missed.append(MissedLocalTick(zone, due, max(served, default=None)))
    return tuple(missed)
