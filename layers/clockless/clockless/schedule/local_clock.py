"""A local time in several zones, as one job's ticks: 07:30 in New York and in Chicago.

Schedules are written in UTC (rule `utc_schedule`), and 07:30 in New York is 12:30 UTC in winter
and 11:30 in summer; no one UTC hour holds it, and the two zones share no hour either. A job that
declares a `LocalClock` is scheduled by one UTC cron at every hour its local time can fall on
(`cron(30 11,12,13 * * ? *)` for the two zones), and its ticks are the cron's instants at which the
clock shows that time in at least one of its zones: Scheduler fires the cron at all of them, and
an instant that is that time nowhere is not a tick (the kit drops its delivery unclaimed, the tools
list no such tick, as missed or otherwise). A tick's identity stays the job and its UTC instant:
two zones whose clocks show the time at the same instant (London in summer and Lagos, 09:00 both at
08:00 UTC) share one tick, which serves both (`zones_at`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo

from clockless.errors import ClocklessError
from clockless.schedule.zones import is_iana_zone

# What a job without a local time declares (Mappings.Jobs.<Id>.LocalTime left out).
NO_LOCAL_TIME: Final = "none"
_CLOCK: Final = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


class LocalClockError(ClocklessError, ValueError):
    """A local time or its zones cannot be used; the message says which and why."""


@dataclass(frozen=True, slots=True)
class LocalClock:
    """The wall-clock time `at` (to the minute) in each of `zones`."""

    at: time
    zones: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, zones: Sequence[str], *, where: str = "LocalTime") -> LocalClock:
        match = _CLOCK.match(text.strip())
        if match is None:
            raise LocalClockError(f'{where}: {text!r} is not a 24-hour HH:MM time such as "07:30"')
        found = tuple(zone.strip() for zone in zones)
        if not found or "" in found:
            raise LocalClockError(f"{where}: names no zone (or an empty one) to keep {text.strip()} in")
        for zone in found:
            if not is_iana_zone(zone):
                raise LocalClockError(f"{where}: {zone!r} is not an IANA time zone")
        if len(set(found)) != len(found):
            raise LocalClockError(f"{where}: lists a zone more than once in {', '.join(found)}")
        return cls(time(int(match.group(1)), int(match.group(2))), found)

    def zones_at(self, moment: datetime) -> tuple[str, ...]:
        """The zones whose clocks show `at` at `moment`: the zones the tick serves."""
        utc = moment.astimezone(UTC)
        return tuple(
            zone
            for zone in self.zones
            if (local := utc.astimezone(ZoneInfo(zone))).hour == self.at.hour
            and local.minute == self.at.minute
            and local.second == 0
        )

    def latest_in(self, zone: str, moment: datetime) -> datetime | None:
        """The latest instant at or before `moment` at which `zone`'s clock showed `at`: the zone's
        local tick due by then. A day whose clocks skip `at` (spring forward) has none, so the day
        before's counts; a day whose clocks show it twice (fall back) has two. Its gap to the one
        before is 23 or 25 hours across a change of offset; None when `zone` is not one of the clock's."""
        if zone not in self.zones:
            return None
        place = ZoneInfo(zone)
        utc = moment.astimezone(UTC)
        today = utc.astimezone(place).date()
        for back in range(3):
            day = today - timedelta(days=back)
            found = [
                instant
                for fold in (1, 0)
                # An instant that does not read back as `at` fell in a skipped hour: no such local time.
                if (instant := datetime.combine(day, self.at, place).replace(fold=fold).astimezone(UTC)) <= utc
                and instant.astimezone(place).time() == self.at
            ]
            if found:
                return max(found)
        return None

    def serves(self, moment: datetime) -> bool:
        return bool(self.zones_at(moment))

    def describe(self) -> str:
        return f"{self.at:%H:%M} local in {', '.join(self.zones)}"
