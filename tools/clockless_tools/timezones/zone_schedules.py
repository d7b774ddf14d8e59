"""A local time in several zones (`LocalTime` with `OperatingTimeZones`) as the UTC cron that keeps it:
each zone's schedule (the UTC hours its local time falls on over the year, one per UTC offset it
takes), and the one cron at all of them that a job's declaration writes as its `Schedule`.

Only hours on which the local time falls are listed, so every hour of the cron fires a tick in the
year: 07:30 in New York and Chicago is 11:30 and 12:30 UTC (summer), 12:30 and 13:30 (winter), so
`cron(30 11,12,13 * * ? *)`; of its three daily instants, the two at 07:30 somewhere are ticks
(`clockless.schedule.local_clock`). A local time the zone skips when its clocks go forward (02:30 on
the spring change in New York) happens nowhere that day, and has no tick then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from clockless.schedule.local_clock import LocalClock, LocalClockError
from clockless_tools.timezones.event import utc_offset


@dataclass(frozen=True, slots=True)
class ZoneSchedule:
    """One zone's share of a local time: the UTC hour:minute it falls on under each offset of the year."""

    zone: str
    # (UTC offset as `UTC-05:00`, UTC hour, UTC minute), in the order the year meets them.
    offsets: tuple[tuple[str, int, int], ...]

    def describe(self) -> str:
        return f"{self.zone} " + ", ".join(
            f"{hour:02d}:{minute:02d} UTC ({offset})" for offset, hour, minute in self.offsets
        )


def zone_schedules(clock: LocalClock, begin: datetime, end: datetime) -> tuple[ZoneSchedule, ...]:
    """Each zone's UTC hours for `clock` on the days of [begin, end)."""
    found = []
    for zone in clock.zones:
        tz = ZoneInfo(zone)
        offsets: dict[tuple[str, int, int], None] = {}
        day = (begin - timedelta(days=1)).date()
        while day <= end.date():
            wall = datetime.combine(day, clock.at, tz)
            moment = wall.astimezone(UTC)
            # A wall time clocks skip (spring forward) maps back to another; it happens nowhere that day.
            if moment.astimezone(tz).replace(tzinfo=None) == wall.replace(tzinfo=None) and begin <= moment < end:
                offsets[(utc_offset(moment.astimezone(tz)), moment.hour, moment.minute)] = None
            day += timedelta(days=1)
        found.append(ZoneSchedule(zone, tuple(offsets)))
    return tuple(found)


def local_time_cron(clock: LocalClock, begin: datetime, end: datetime) -> str:
    """The daily UTC cron at every hour `clock` falls on in [begin, end); LocalClockError when its
    zones put it on different minutes of the hour (a half-hour zone beside a whole-hour one)."""
    schedules = zone_schedules(clock, begin, end)
    minutes = {minute for schedule in schedules for _, _, minute in schedule.offsets}
    if len(minutes) != 1:
        shown = "; ".join(schedule.describe() for schedule in schedules)
        raise LocalClockError(
            f"{clock.describe()} falls on {len(minutes) or 'no'} different minute(s) of the UTC hour ({shown}): one "
            "cron has one minute; declare a job for the zones of each minute"
        )
    hours = sorted({hour for schedule in schedules for _, hour, _ in schedule.offsets})
    return f"cron({minutes.pop()} {','.join(str(hour) for hour in hours)} * * ? *)"
