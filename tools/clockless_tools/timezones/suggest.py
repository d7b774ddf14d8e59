"""The UTC hours that satisfy a rule all year, and the offset changes of a zone in a range."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from clockless import format_scheduled_time
from clockless_tools.timezones.event import utc_offset
from clockless_tools.timezones.rule import OFFSET_PROBE, LocalTimeRule, breaches


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """A zone's UTC offset changing (a DST transition) at a UTC instant."""

    zone: str
    at: datetime
    before: str
    after: str


def fixed_minute(expression: str) -> int:
    """The minute a cron fires at when its minute field is one number; 0 otherwise."""
    match = re.match(r"^cron\((\d{1,2})\s", expression.strip())
    return int(match.group(1)) if match and int(match.group(1)) < 60 else 0


@functools.lru_cache(maxsize=64)
def suggest_utc_hours(
    rule: LocalTimeRule, zones: tuple[str, ...], begin: datetime, end: datetime, *, minute: int = 0
) -> tuple[int, ...]:
    """The UTC hours H at which a daily tick at H:minute keeps `rule` in every zone on every day."""
    days = [begin.date() + timedelta(days=n) for n in range((end - begin).days)]
    good = []
    for hour in range(24):
        at = time(hour, minute)
        if all(not breaches(rule, datetime.combine(day, at, UTC), zones) for day in days):
            good.append(hour)
    return tuple(good)


def hour_runs(hours: Sequence[int]) -> list[list[int]]:
    """Consecutive hours grouped, wrapping past midnight: (0, 1, 14, 15, 23) -> [[14, 15], [23, 0, 1]]."""
    chosen = sorted(set(hours))
    if not chosen:
        return []
    if len(chosen) == 24:
        return [chosen]
    runs: list[list[int]] = []
    for hour in chosen:
        if runs and runs[-1][-1] == hour - 1:
            runs[-1].append(hour)
        else:
            runs.append([hour])
    if len(runs) > 1 and runs[0][0] == 0 and runs[-1][-1] == 23:
        runs[0] = runs.pop() + runs[0]
    return sorted(runs, key=lambda run: run[0])


def describe_hours(hours: Sequence[int], minute: int = 0) -> str:
    """`14:00-03:00` for a tick each hour from 14:00 through 03:00 UTC; runs joined by commas."""
    if not hours:
        return "none"
    if len(set(hours)) == 24:
        return f"every hour (at :{minute:02d})"
    return ", ".join(
        f"{run[0]:02d}:{minute:02d}" if len(run) == 1 else f"{run[0]:02d}:{minute:02d}-{run[-1]:02d}:{minute:02d}"
        for run in hour_runs(hours)
    )


def offset_changes(zone: str, begin: datetime, end: datetime) -> list[OffsetChange]:
    """Every change of the zone's UTC offset in [begin, end), to the second."""
    tz = ZoneInfo(zone)

    def offset(moment: datetime) -> timedelta | None:
        return moment.astimezone(tz).utcoffset()

    changes = []
    probe = begin
    while probe < end:
        following = min(probe + OFFSET_PROBE, end)
        if offset(probe) != offset(following):
            # Bisect on whole seconds: the change happens at the first second with the new offset.
            low, high = 0, int((following - probe).total_seconds())
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (
                    (middle, high) if offset(probe + timedelta(seconds=middle)) == offset(probe) else (low, middle)
                )
            at = probe + timedelta(seconds=high)
            changes.append(OffsetChange(zone, at, utc_offset(probe.astimezone(tz)), utc_offset(at.astimezone(tz))))
        probe = following
    return changes


@dataclass(frozen=True, slots=True)
class Season:
    """A stretch of the year in which no operating zone changes its UTC offset, and the UTC hours a
    daily tick may take in it."""

    start: datetime
    end: datetime
    hours: tuple[int, ...]


def seasons(
    rule: LocalTimeRule, zones: tuple[str, ...], begin: datetime, end: datetime, *, minute: int = 0
) -> list[Season]:
    """The year cut at every offset change of the zones (DST), each stretch with the UTC hours that keep
    the rule on every one of its days: what two schedules bounded by StartDate/EndDate would take when
    no one hour fits all year. Neighbouring stretches with the same hours are one."""
    cuts = sorted({change.at for zone in zones for change in offset_changes(zone, begin, end)})
    found: list[Season] = []
    for start, stop in zip([begin, *cuts], [*cuts, end], strict=True):
        days = [start.date() + timedelta(days=n) for n in range((stop.date() - start.date()).days + 1)]
        hours = []
        for hour in range(24):
            ticks = [datetime.combine(day, time(hour, minute), UTC) for day in days]
            if all(not breaches(rule, tick, zones) for tick in ticks if start <= tick < stop):
                hours.append(hour)
        if found and found[-1].hours == tuple(hours):
            found[-1] = Season(found[-1].start, stop, found[-1].hours)
        else:
            found.append(Season(start, stop, tuple(hours)))
    return found


def _fires(hour: int, minute: int, start: datetime, end: datetime) -> bool:
    """Whether a daily cron at hour:minute UTC fires at least once in [start, end)."""
    first = datetime.combine(start.date(), time(hour, minute), UTC)
    return (first if first >= start else first + timedelta(days=1)) < end


def firing_stretches(stretches: Sequence[Season], minute: int = 0) -> list[tuple[int, Season]]:
    """Each stretch with the hour its schedule takes (the first of its longest run of fitting hours),
    leaving out a stretch whose schedule would never fire in it (one hour between two zones' offset
    changes, which a daily tick at another hour never meets): its time goes to a neighbour whose
    schedule does not fire in it either, so the schedules listed still cover the year between them."""
    chosen = [(max(hour_runs(season.hours), key=len)[0], season) for season in stretches]
    kept: list[tuple[int, Season]] = []
    pending: Season | None = None  # a left-out stretch the next kept one may start at
    for index, (hour, season) in enumerate(chosen):
        if _fires(hour, minute, season.start, season.end):
            widened = pending is not None and not _fires(hour, minute, pending.start, season.start)
            kept.append((hour, Season(pending.start, season.end, season.hours) if pending and widened else season))
            pending = None
            continue
        previous = kept[-1] if kept else None
        if previous is not None and not _fires(previous[0], minute, season.start, season.end):
            kept[-1] = (previous[0], Season(previous[1].start, season.end, previous[1].hours))
        elif index + 1 < len(chosen):
            pending = season if pending is None else Season(pending.start, season.end, pending.hours)
    return kept


def per_zone_hours(
    rule: LocalTimeRule, zones: tuple[str, ...], begin: datetime, end: datetime, *, minute: int = 0
) -> tuple[tuple[str, int], ...]:
    """When several zones share no UTC hour: for each zone, the hour (the first of its longest run)
    that keeps the rule there all year; () when there is one zone, or a zone has none."""
    if len(zones) < 2:
        return ()
    found = []
    for zone in zones:
        hours = suggest_utc_hours(rule, (zone,), begin, end, minute=minute)
        if not hours:
            return ()
        found.append((zone, max(hour_runs(hours), key=len)[0]))
    return tuple(found)


def no_hour_advice(
    stretches: Sequence[Season],
    zones: Sequence[str],
    minute: int = 0,
    per_zone: Sequence[tuple[str, int]] = (),
    local_time: tuple[str, str] | None = None,
) -> str:
    """What to do when no daily UTC hour keeps a rule all year: the stretches between the zones' offset
    changes (`seasons`) each with the hour that keeps it there, or, when even a stretch has none, what
    to widen."""
    by_zone = (
        "; or a job per zone, each with its one zone (OperatingTimeZones) and a daily UTC hour that keeps the rule "
        "there all year: " + ", ".join(f"{zone} cron({minute} {hour} * * ? *)" for zone, hour in per_zone)
        if per_zone
        else ""
    )
    if local_time is not None:
        at, cron = local_time
        by_zone = (
            f'; or one declaration, a tick at {at} in each zone: LocalTime: "{at}" with Schedule: {cron}, every UTC '
            f"hour {at} falls on in the year (`clockless new job <name> --at {at} --zones <zones>` writes both; "
            f"the kit drops the cron's instants that are {at} nowhere)" + by_zone
        )
    if any(not season.hours for season in stretches):
        return (
            "no UTC hour keeps the rule even between the zones' offset changes: a daily tick cannot keep it in "
            "all of these zones; widen the rule (LocalTimeRule) or serve fewer zones (OperatingTimeZones)" + by_zone
        )
    parts = [
        f"cron({minute} {hour} * * ? *) from "
        f"{format_scheduled_time(season.start)} to {format_scheduled_time(season.end)} "
        f"({describe_hours(season.hours, minute)} fit)"
        for hour, season in firing_stretches(stretches, minute)
    ]
    zoned = (
        f"; or, for its one zone, a schedule written in it (ScheduleExpressionTimezone: {zones[0]}), which "
        "Scheduler moves with DST but rule utc_schedule refuses today (a local cron skips the spring-forward "
        "hour's tick and the dead-man gap becomes 23 h or 25 h)"
        if len(zones) == 1
        else ""
    )
    return (
        "no one UTC hour keeps the rule all year, because the zones' UTC offsets change: use two schedules, "
        "each bounded by StartDate/EndDate at the changes: " + "; ".join(parts) + zoned + by_zone
    )
