"""`clockless schedules check`: every schedule expanded over one year,
each tick checked against the rule in every zone."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from clockless import format_scheduled_time
from clockless.schedule.expressions import ScheduleExpressionError
from clockless.schedule.local_clock import LocalClock, LocalClockError
from clockless_tools.template.intrinsics import resolve
from clockless_tools.template.model import Function, Schedule, Template
from clockless_tools.timezones.declaration import TimeDeclaration, missing_declaration_keys, read_declaration
from clockless_tools.timezones.event import (
    ScheduledEvent,
    expression_error,
    job_name,
    utc_offset,
    written_in_utc,
)
from clockless_tools.timezones.rule import (
    DECLARED,
    LOCAL_TIME_ENVIRONMENT_VARIABLE,
    LOCAL_TIME_SCHEDULE,
    METADATA_KEY,
    NO_RULE,
    UTC_SCHEDULE,
    ZONES_ENVIRONMENT_VARIABLE,
    ZONES_KEY,
    ZONES_MATCH_ENVIRONMENT,
    LocalTimeRule,
    breaches,
)
from clockless_tools.timezones.suggest import (
    OffsetChange,
    Season,
    fixed_minute,
    hour_runs,
    no_hour_advice,
    offset_changes,
    per_zone_hours,
    seasons,
    suggest_utc_hours,
)
from clockless_tools.timezones.zone_schedules import ZoneSchedule, local_time_cron, zone_schedules


@dataclass(frozen=True, slots=True)
class LocalTimeViolation:
    """A rule broken by a schedule: at one tick in one zone, or by the schedule's configuration."""

    job: str
    function_id: str
    event_id: str
    rule: str
    detail: str
    tick: datetime | None = None
    zone: str | None = None
    local_time: datetime | None = None
    days_off: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "function": self.function_id,
            "event": self.event_id,
            "rule": self.rule,
            "detail": self.detail,
            "tick": None if self.tick is None else format_scheduled_time(self.tick),
            "zone": self.zone,
            "local_time": None if self.local_time is None else self.local_time.isoformat(),
            "utc_offset": None if self.local_time is None else utc_offset(self.local_time),
        }


@dataclass(frozen=True, slots=True)
class ViolationGroup:
    """Violations alike but for their tick: same job, rule, zone, local clock time and UTC offset."""

    violations: tuple[LocalTimeViolation, ...]

    @property
    def first(self) -> LocalTimeViolation:
        return self.violations[0]

    @property
    def ticks(self) -> list[datetime]:
        return [v.tick for v in self.violations if v.tick is not None]

    def runs(self) -> list[tuple[datetime, datetime, int]]:
        """(first, last, count) of each stretch of ticks at the group's own period (e.g. daily)."""
        ticks = self.ticks
        if not ticks:
            return []
        step = min((b - a for a, b in itertools.pairwise(ticks)), default=timedelta(0))
        runs: list[tuple[datetime, datetime, int]] = []
        start = previous = ticks[0]
        count = 1
        for tick in ticks[1:]:
            if tick - previous != step:
                runs.append((start, previous, count))
                start, count = tick, 0
            previous = tick
            count += 1
        runs.append((start, previous, count))
        return runs


@dataclass(frozen=True, slots=True)
class ScheduleCheck(ScheduledEvent):
    """One schedule's year: what was declared, how many ticks were checked, what broke, what would fit."""

    ticks_checked: int
    violations: tuple[LocalTimeViolation, ...]
    # Why the ticks were not expanded (no rule, no declaration, not UTC); None when they were.
    not_expanded: str | None
    suggested_hours: tuple[int, ...] | None
    suggestion_minute: int
    # When no one hour fits all year: the stretches between the zones' offset changes and their hours.
    seasons: tuple[Season, ...] = ()
    # And when several zones share no hour but each has one: each zone's (`per_zone_hours`).
    per_zone: tuple[tuple[str, int], ...] = ()
    # Then, when the rule names a first local time: that time as the job's LocalTime, and its cron.
    local_time_advice: tuple[str, str] | None = None
    # A job with a LocalTime: the time, and each zone's UTC hours for it over the year.
    local_time: str | None = None
    zone_schedules: tuple[ZoneSchedule, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def suggested_expression(self) -> str | None:
        """A daily cron at the first hour of the longest stretch of suggested hours."""
        if not self.suggested_hours:
            return None
        longest = max(hour_runs(self.suggested_hours), key=len)
        return f"cron({self.suggestion_minute} {longest[0]} * * ? *)"

    @property
    def no_hour_advice(self) -> str | None:
        """What to do when no daily UTC hour keeps the rule all year; None when one does."""
        if self.suggested_hours != () or not self.seasons or self.declaration is None:
            return None
        return no_hour_advice(
            self.seasons, self.declaration.zones, self.suggestion_minute, self.per_zone, self.local_time_advice
        )

    def groups(self) -> list[ViolationGroup]:
        grouped: dict[tuple[Any, ...], list[LocalTimeViolation]] = {}
        for violation in self.violations:
            local = violation.local_time
            clock = None if local is None else (f"{local:%H:%M}", utc_offset(local))
            key = (violation.rule, violation.zone, clock, violation.days_off, violation.detail)
            grouped.setdefault(key, []).append(violation)
        return [ViolationGroup(tuple(items)) for items in grouped.values()]

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.describe(),
            "ticks_checked": self.ticks_checked,
            "not_expanded": self.not_expanded,
            "ok": self.ok,
            "suggested_utc_hours": None if self.suggested_hours is None else list(self.suggested_hours),
            "suggested_expression": self.suggested_expression,
            "no_hour_advice": self.no_hour_advice,
            "local_time": self.local_time,
            "zone_schedules": {
                schedule.zone: [
                    {"utc_offset": offset, "utc": f"{hour:02d}:{minute:02d}"}
                    for offset, hour, minute in schedule.offsets
                ]
                for schedule in self.zone_schedules
            },
            "violations": [v.as_dict() for v in self.violations],
        }


@dataclass(frozen=True, slots=True)
class TimeZoneReport:
    start: datetime
    end: datetime
    schedules: tuple[ScheduleCheck, ...]
    offset_changes: Mapping[str, tuple[OffsetChange, ...]]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.schedules)

    @property
    def violations(self) -> list[LocalTimeViolation]:
        return [v for check in self.schedules for v in check.violations]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "window": {"start": format_scheduled_time(self.start), "end": format_scheduled_time(self.end)},
            "zones": {
                zone: [{"at": format_scheduled_time(c.at), "before": c.before, "after": c.after} for c in changes]
                for zone, changes in self.offset_changes.items()
            },
            "violations": len(self.violations),
            "schedules": [check.as_dict() for check in self.schedules],
        }


def one_year_from(start: date) -> tuple[datetime, datetime]:
    """[start 00:00 UTC, the same day a year later): holds both DST transitions of every zone."""
    begin = datetime.combine(start, time(), UTC)
    try:
        end = begin.replace(year=begin.year + 1)
    except ValueError:  # 29 February
        end = begin.replace(year=begin.year + 1, day=28) + timedelta(days=1)
    return begin, end


def check_template(template: Template, *, start: date) -> TimeZoneReport:
    """Check every schedule of every scheduled function over the year from `start`."""
    begin, end = one_year_from(start)
    checks = [
        _check_schedule(function, schedule, template, begin, end)
        for function in template.scheduled_functions.values()
        for schedule in function.schedules
    ]
    zones = sorted({zone for check in checks if check.declaration for zone in check.declaration.zones})
    changes = {zone: tuple(offset_changes(zone, begin, end)) for zone in zones}
    return TimeZoneReport(begin, end, tuple(checks), changes)


def _check_schedule(
    function: Function, schedule: Schedule, template: Template, begin: datetime, end: datetime
) -> ScheduleCheck:
    job = job_name(schedule)

    def violation(rule: str, detail: str, **where: Any) -> LocalTimeViolation:
        return LocalTimeViolation(job, function.logical_id, schedule.event_id, rule, detail, **where)

    violations: list[LocalTimeViolation] = []
    timezone_ok = written_in_utc(function, schedule)
    if not timezone_ok:
        shown = "missing" if schedule.timezone is None else f"{schedule.properties['ScheduleExpressionTimezone']!r}"
        violations.append(
            violation(
                UTC_SCHEDULE,
                f"ScheduleExpressionTimezone is {shown}; schedules are written in UTC (a local-zone cron "
                "skips or repeats ticks at DST changes)",
            )
        )
    missing = missing_declaration_keys(function)
    declaration = None
    if missing:
        violations.append(
            violation(
                DECLARED,
                f"Metadata.{METADATA_KEY} lacks {' and '.join(missing)}: declare the zones the job serves "
                f"and its local-time rule ({NO_RULE!r} if no local hour matters)",
            )
        )
    else:
        declaration = read_declaration(function, template)
        drift = _environment_drift(function, declaration, template)
        if drift:
            violations.append(violation(ZONES_MATCH_ENVIRONMENT, drift))

    ticks: list[datetime] = []
    rule = None if declaration is None else declaration.rule
    not_expanded = None
    # The expression is read by the tick engine whatever the rule, as `schedules show` and the
    # rules read it: one that never fires, or that Scheduler refuses, fails here too.
    try:
        schedule.spec(template).next_ticks(begin, 1)
        clock = schedule.local_clock(template)
    except ScheduleExpressionError as error:
        raise expression_error(schedule, error) from None
    if clock is not None:
        violations.extend(
            violation(LOCAL_TIME_SCHEDULE, detail)
            for detail in _local_time_drift(function, schedule, clock, template, begin=begin, end=end)
        )
    # A schedule outside UTC breaks utc_schedule above, and its ticks are still expanded in its
    # own zone (the tick engine places them as Scheduler does), so its local-time breaches show too.
    if declaration is None:
        not_expanded = "nothing is declared to check them against"
    elif rule is None:
        not_expanded = f"its local-time rule is {NO_RULE!r}, so only the schedule's own zone (UTC) is checked"
    if declaration is not None and rule is not None and not_expanded is None:
        try:
            ticks = schedule.spec(template).ticks_between(begin, end)
        except ScheduleExpressionError as error:
            raise expression_error(schedule, error) from None
        for tick in ticks:
            # A job with a local time serves, at each tick, the zones whose clocks show it.
            served = declaration.zones if clock is None else clock.zones_at(tick)
            violations.extend(
                violation(b.rule, b.detail, tick=tick, zone=b.zone, local_time=b.local_time, days_off=b.days_off)
                for b in breaches(rule, tick, served)
            )
    minute = fixed_minute(schedule.expression)
    suggested = (
        None
        if declaration is None or rule is None or clock is not None
        else suggest_utc_hours(rule, declaration.zones, begin, end, minute=minute)
    )
    fitting = (
        ()
        if suggested != () or declaration is None or rule is None
        else tuple(seasons(rule, declaration.zones, begin, end, minute=minute))
    )
    return ScheduleCheck(
        job=job,
        function_id=function.logical_id,
        event_id=schedule.event_id,
        expression=schedule.expression,
        timezone=schedule.timezone,
        declaration=declaration,
        ticks_checked=len(ticks),
        violations=tuple(violations),
        suggested_hours=suggested,
        suggestion_minute=minute,
        not_expanded=not_expanded,
        seasons=fitting,
        per_zone=(
            per_zone_hours(rule, declaration.zones, begin, end, minute=minute)
            if fitting and declaration is not None and rule is not None
            else ()
        ),
        local_time_advice=(
            suggested_local_time(rule, declaration.zones, begin, end)
            if fitting and declaration is not None and rule is not None
            else None
        ),
        local_time=None if clock is None else f"{clock.at:%H:%M}",
        zone_schedules=() if clock is None else zone_schedules(clock, begin, end),
    )


def suggested_local_time(
    rule: LocalTimeRule, zones: tuple[str, ...], begin: datetime, end: datetime
) -> tuple[str, str] | None:
    """The rule's first local time as a job's LocalTime and the cron that keeps it in `zones` (when
    a tick at it keeps the rule in the zone it serves), or None."""
    if rule.not_before is None or len(zones) < 2:
        return None
    clock = LocalClock(rule.not_before, zones)
    try:
        cron = local_time_cron(clock, begin, end)
    except LocalClockError:
        return None
    return f"{rule.not_before:%H:%M}", cron


def _local_time_drift(
    function: Function, schedule: Schedule, clock: LocalClock, template: Template, *, begin: datetime, end: datetime
) -> list[str]:
    """How the schedule of a job with a local time differs from what its declaration gives: its
    expression from the cron of its zones' hours, its LOCAL_TIME from its Metadata."""
    found = []
    try:
        expected = local_time_cron(clock, begin, end)
    except LocalClockError as error:
        return [str(error)]
    if schedule.expression != expected:
        per_zone = "; ".join(zone.describe() for zone in zone_schedules(clock, begin, end))
        found.append(
            f"ScheduleExpression {schedule.expression} is not the cron of {clock.describe()} over the year: "
            f"{expected} ({per_zone}); set the job's Schedule to it (Mappings.Jobs)"
        )
    value = function.environment.get(LOCAL_TIME_ENVIRONMENT_VARIABLE)
    written = None if value is None else str(resolve(value, template))
    if written != f"{clock.at:%H:%M}":
        found.append(
            f"Metadata.{METADATA_KEY}.local_time declares {clock.at:%H:%M} but the function's "
            f"{LOCAL_TIME_ENVIRONMENT_VARIABLE} is {written or 'unset'} (the kit drops deliveries by it)"
        )
    return found


def _environment_drift(function: Function, declaration: TimeDeclaration, template: Template) -> str | None:
    value = function.environment.get(ZONES_ENVIRONMENT_VARIABLE)
    if value is None:
        return None
    resolved = resolve(value, template)
    environment_zones = tuple(zone.strip() for zone in str(resolved).split(","))
    if environment_zones == declaration.zones:
        return None
    return (
        f"Metadata.{METADATA_KEY}.{ZONES_KEY} declares {', '.join(declaration.zones)} but the function's "
        f"{ZONES_ENVIRONMENT_VARIABLE} is {', '.join(environment_zones)}"
    )
