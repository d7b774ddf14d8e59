"""The schedule keys of a new job's declaration (`clockless new job --schedule/--zones/--local-time`),
with the numbers the rules ask for derived from the schedule instead of left to the user.

From the schedule's period and longest gap (the tick engine's):
- `SchedulerMaxEventAgeSeconds`: Scheduler's retries must end before the next tick (rule
  schedule-delivery: precision 59 s + age < period): a quarter of the period, whole minutes, at
  least 60 s (Scheduler's minimum), at most the loop's 3600;
- `LambdaMaxEventAgeSeconds`: half the period, whole minutes, at least 180 s (both of Lambda's
  asynchronous retries, about 1 and 2 minutes after a failure), at most 3600;
- `GraceMinutes`: the latest a tick can still succeed (rule dead-man-alarm, `latest_success`: 59 s
  + both ages + the 120 s Timeout, and for a fanned-out job 285 s of fan-out and 310 s of a failed
  partition's redelivery), rounded up to 5 minutes;
- `DeadManPeriodSeconds`, `DeadManPeriods`: the alarm shape the rule asks for (5-minute periods while
  gap + grace fit in a day, else hours);
- `TickPeriodSeconds`: the period (its page's succeeded ticks, one per period); a day for a local
  time (`--at`), whose zones each have one tick a day (their own dead-man: LocalTickMissedAlarm).
A key whose loop default already passes is not written, so a daily job's block stays five lines.
A `rate()` whose period divides the hour or the day is written as the cron of that rhythm counted
from 00:00 UTC (a comment above it says so): a rate() counts from a StartDate, a per-job parameter
the jobs' loop cannot set (rule rate-anchored); any other rate() is refused.
`--zones` and `--local-time` are checked as `clockless schedules check` checks them, over the year
from the given day: a schedule that breaks the rule is refused with the hours that would keep it,
or what to do when none does.
`--at 07:30` with `--zones` is a local time kept in every zone: it writes `LocalTime` and, as
`Schedule`, the cron of every UTC hour that time falls on in the year (each zone's hours in a comment
above it; `timezones/zone_schedules.py`), whose instants at that time in no zone the kit drops; the
derived numbers come from the ticks that remain.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final

from clockless.fanout.retry import FIRST_BACKOFF_SECONDS
from clockless.schedule.expressions import (
    ScheduleExpressionError,
    ScheduleSpec,
    expression_kind,
    rate_period,
    utc_spec,
)
from clockless.schedule.local_clock import LocalClock, LocalClockError
from clockless_tools.architecture.dead_man_alarm import expected_alarm_shape
from clockless_tools.architecture.latest_success import PRECISION_SECONDS
from clockless_tools.errors import ToolError
from clockless_tools.timezones.check import one_year_from, suggested_local_time
from clockless_tools.timezones.declaration import parse_rule, parse_zones
from clockless_tools.timezones.rule import (
    NOT_AFTER,
    NOT_BEFORE,
    SAME_LOCAL_DATE,
    DeclarationError,
    LocalTimeRule,
    breaches,
)
from clockless_tools.timezones.suggest import (
    describe_hours,
    fixed_minute,
    no_hour_advice,
    per_zone_hours,
    seasons,
    suggest_utc_hours,
)
from clockless_tools.timezones.zone_schedules import local_time_cron, zone_schedules

# The loops' defaults (template.yaml, the comment above Mappings: Jobs:).
DEFAULT_SCHEDULE: Final = "cron(0 3 * * ? *)"
DEFAULTS: Final = {
    "SchedulerMaxEventAgeSeconds": 3600,
    "LambdaMaxEventAgeSeconds": 3600,
    "GraceMinutes": 130,  # the plain loop's; the fanned-out loop's is FANNED_OUT_GRACE_MINUTES
    "DeadManPeriodSeconds": 3600,
    "DeadManPeriods": 27,
    "TickPeriodSeconds": 86400,
}
TIMEOUT_SECONDS: Final = 120  # the loops' function Timeout
FAN_OUT_SECONDS: Final = 285  # the loop's worker expected_duration_seconds
# A failed partition's redelivery: the loop's worker Timeout (300 s) and the kit's first backoff.
REDELIVERY_SECONDS: Final = 300 + FIRST_BACKOFF_SECONDS
FANNED_OUT_GRACE_MINUTES: Final = 135  # the fanned-out loop's GraceMinutes default
ALARM_RANGE_LIMIT: Final = 7 * 86400  # CloudWatch: Period x EvaluationPeriods


class ScheduleOptionError(ToolError, ValueError):
    """An option of `clockless new job` cannot be used; the message names it and what would do."""


@dataclass(frozen=True)
class ScheduleKeys:
    """The declaration lines, in order, beside Name, CodeUri, Package and Tables."""

    lines: tuple[str, ...]
    # Whether they declare a LocalTime (the trigger's copy of the schedule then carries it too).
    local_time: bool = False


# What the command writes without --schedule: every other key the loop's default, a daily job's.
DAILY: Final = ScheduleKeys((f"Schedule: {DEFAULT_SCHEDULE}",))


def schedule_keys(
    expression: str | None,
    *,
    fan_out: bool,
    zones: str | None = None,
    local_time: str | None = None,
    at: str | None = None,
    checked_from: date,
) -> ScheduleKeys:
    if at is not None:
        return _local_time_keys(
            at, expression, fan_out=fan_out, zones=zones, local_time=local_time, checked_from=checked_from
        )
    schedule = (expression or DEFAULT_SCHEDULE).strip()
    try:
        kind = expression_kind(schedule)
        spec = utc_spec(schedule)
        spec.validate()
    except ScheduleExpressionError as error:
        raise ScheduleOptionError(f"--schedule {schedule!r}: {error}") from None
    if kind == "at":
        raise ScheduleOptionError(f"--schedule {schedule!r}: at() is one tick, not a job's schedule; use a cron")
    lines = []
    if kind == "rate":
        cron = rate_as_cron(schedule)
        if cron is None:
            raise ScheduleOptionError(
                f"--schedule {schedule!r}: a rate() counts from its StartDate, which rule rate-anchored asks for as a "
                "parameter the jobs' loop cannot set per job, and this one does not divide the hour or the day into "
                "a cron; write the schedule as a cron, e.g. cron(0/15 * * * ? *) for every 15 minutes"
            )
        lines.append(
            f"# --schedule {schedule}: the same rhythm as a cron counted from 00:00 UTC (the loop sets no StartDate)"
        )
        schedule, spec = cron, utc_spec(cron)
    lines.append(f"Schedule: {schedule}")
    lines += _zone_lines(spec, schedule, zones, local_time, checked_from)
    lines += _derived_lines(spec, fan_out=fan_out)
    return ScheduleKeys(tuple(lines))


def _local_time_keys(
    at: str, expression: str | None, *, fan_out: bool, zones: str | None, local_time: str | None, checked_from: date
) -> ScheduleKeys:
    """--at: LocalTime, and the cron of the UTC hours it falls on in --zones as Schedule."""
    if expression is not None:
        raise ScheduleOptionError(
            f"--at {at} writes the schedule (the cron of every UTC hour {at} falls on in --zones); leave out --schedule"
        )
    if zones is None:
        raise ScheduleOptionError(
            f"--at {at} needs --zones: the zones whose clocks the ticks keep (e.g. --zones Europe/Berlin)"
        )
    try:
        zone_list = parse_zones([z.strip() for z in zones.split(",")], "--zones")
        clock = LocalClock.parse(at, zone_list, where="--at")
        begin, end = one_year_from(checked_from)
        cron = local_time_cron(clock, begin, end)
    except (DeclarationError, LocalClockError) as error:
        raise ScheduleOptionError(str(error)) from None
    spec = ScheduleSpec.of(cron, local_clock=clock)
    lines = [
        f"# A tick at {clock.at:%H:%M} in each zone; Schedule is every UTC hour that falls on in the year",
        *(f"# {zone.describe()}" for zone in zone_schedules(clock, begin, end)),
        "# (the kit drops the cron's other instants; `clockless schedules check` holds Schedule to LocalTime).",
        f'LocalTime: "{clock.at:%H:%M}"',
        f"Schedule: {cron}",
        f"OperatingTimeZones: [{', '.join(zone_list)}]",
    ]
    if local_time is not None:
        try:
            rule = parse_rule(local_time.strip(), "--local-time")
        except DeclarationError as error:
            raise ScheduleOptionError(str(error)) from None
        lines.append(f"LocalTimeRule: {local_time.strip()}")
        broken = [
            tick
            for tick in spec.ticks_between(begin, end)
            if rule is not None and breaches(rule, tick, clock.zones_at(tick))
        ]
        if broken:
            raise ScheduleOptionError(
                f"--at {at} breaks --local-time {local_time} in the zone it serves on {len(broken)} ticks of the year "
                f"from {checked_from} (first {broken[0]:%Y-%m-%dT%H:%MZ}); pick an --at the rule allows"
            )
    return ScheduleKeys(tuple(lines + _derived_lines(spec, fan_out=fan_out)), local_time=True)


def rate_as_cron(expression: str) -> str | None:
    """The cron that fires a rate()'s rhythm from the hour (or midnight), when its period divides the
    hour or the day; else None. A rate() counts from a StartDate, a per-job parameter the loop has not."""
    period = rate_period(expression)
    minutes = 0 if period is None else int(period.total_seconds()) // 60
    if 0 < minutes < 60 and 60 % minutes == 0:
        return f"cron(0/{minutes} * * * ? *)"
    if minutes == 60:
        return "cron(0 * * * ? *)"
    if minutes % 60 == 0 and 0 < minutes // 60 < 24 and 24 % (minutes // 60) == 0:
        return f"cron(0 0/{minutes // 60} * * ? *)"
    if minutes == 24 * 60:
        return "cron(0 0 * * ? *)"
    return None


# A job with a local time: each zone has one tick a day, however close its cron's hours fall.
LOCAL_TIME_PAGE_PERIOD: Final = 86400


def page_period(spec: ScheduleSpec) -> int:
    """The seconds its page sums succeeded ticks over (TickPeriodSeconds): its period, or a day for a
    local time (each zone's one tick; a zone's missed one is its LocalTickMissedAlarm's)."""
    return LOCAL_TIME_PAGE_PERIOD if spec.local_clock is not None else int(spec.nominal_period().total_seconds())


def _derived_lines(spec: ScheduleSpec, *, fan_out: bool) -> list[str]:
    period = int(spec.nominal_period().total_seconds())
    scheduler_age = min(3600, max(60, period // 4 // 60 * 60))
    if PRECISION_SECONDS + scheduler_age >= period:
        raise ScheduleOptionError(
            f"--schedule: ticks {period} s apart leave no room for Scheduler's retries (at least 60 s, plus its "
            f"{PRECISION_SECONDS} s precision, must end before the next tick): schedule at most every 2 minutes"
        )
    lambda_age = min(3600, max(180, period // 2 // 60 * 60))
    fanned_out = FAN_OUT_SECONDS + REDELIVERY_SECONDS if fan_out else 0
    latest = PRECISION_SECONDS + scheduler_age + lambda_age + TIMEOUT_SECONDS + fanned_out
    needed_grace = math.ceil(latest / 60)
    defaults = {**DEFAULTS, "GraceMinutes": FANNED_OUT_GRACE_MINUTES} if fan_out else DEFAULTS
    # A daily job keeps the loop's grace when it covers the sum; a shorter period gets the sum itself, so
    # its dead-man alarm fires soon after a missed tick.
    daily_default = period >= 86400 and needed_grace <= defaults["GraceMinutes"]
    grace = defaults["GraceMinutes"] if daily_default else 5 * math.ceil(needed_grace / 5)
    alarm_period, alarm_periods = expected_alarm_shape(spec, timedelta(minutes=grace))
    if alarm_period * alarm_periods > ALARM_RANGE_LIMIT:
        raise ScheduleOptionError(
            f"--schedule: ticks up to {spec.longest_gap()} apart plus a {grace} min grace exceed the 7 days a "
            "CloudWatch alarm can look back (Period x EvaluationPeriods), so no dead-man alarm can watch it "
            "(rule dead-man-alarm): schedule it at least every 6 days"
        )
    values = {
        "SchedulerMaxEventAgeSeconds": scheduler_age,
        "LambdaMaxEventAgeSeconds": lambda_age,
        "GraceMinutes": grace,
        "DeadManPeriodSeconds": alarm_period,
        "DeadManPeriods": alarm_periods,
        "TickPeriodSeconds": page_period(spec),
    }
    return [f"{key}: {value}" for key, value in values.items() if value != defaults[key]]


def _zone_lines(
    spec: ScheduleSpec, schedule: str, zones: str | None, local_time: str | None, checked_from: date
) -> list[str]:
    try:
        zone_list = None if zones is None else parse_zones([z.strip() for z in zones.split(",")], "--zones")
        rule = None if local_time is None else parse_rule(local_time.strip(), "--local-time")
    except DeclarationError as error:
        raise ScheduleOptionError(str(error)) from None
    lines = []
    if zone_list is not None:
        lines.append(f"OperatingTimeZones: [{', '.join(zone_list)}]")
    if local_time is not None:
        lines.append(f"LocalTimeRule: {local_time.strip()}")
    if rule is None:
        return lines
    if zone_list is None:
        raise ScheduleOptionError(
            "--local-time needs --zones: the stack's OperatingTimeZones are the examples' zones, not necessarily "
            "this job's (e.g. --zones Europe/Berlin)"
        )
    begin, end = one_year_from(checked_from)
    broken = [tick for tick in spec.ticks_between(begin, end) if breaches(rule, tick, zone_list)]
    if not broken:
        return lines
    minute = fixed_minute(schedule)
    hours = suggest_utc_hours(rule, zone_list, begin, end, minute=minute)
    if hours:
        instead = f"UTC hours that keep it all year: {describe_hours(hours, minute)}"
    else:
        stretches = seasons(rule, zone_list, begin, end, minute=minute)
        per_zone = per_zone_hours(rule, zone_list, begin, end, minute=minute)
        local = suggested_local_time(rule, zone_list, begin, end)
        instead = no_hour_advice(stretches, zone_list, minute, per_zone, local)
        instead += _wider_rule(rule, zone_list, begin, end, minute)
    raise ScheduleOptionError(
        f"--schedule {schedule} breaks --local-time {local_time} in {', '.join(zone_list)} on {len(broken)} ticks "
        f"of the year from {checked_from} (first {broken[0]:%Y-%m-%dT%H:%MZ}); {instead}"
    )


def _wider_rule(rule: LocalTimeRule, zones: tuple[str, ...], begin: datetime, end: datetime, minute: int) -> str:
    """A rule with one bound fewer that a daily UTC hour keeps all year, as the option to pass; or ""."""
    for wider in (dataclasses.replace(rule, not_after=None), dataclasses.replace(rule, not_before=None)):
        if wider == rule or (wider.not_before is None and wider.not_after is None):
            continue
        hours = suggest_utc_hours(wider, zones, begin, end, minute=minute)
        if hours:
            return (
                f"; or a wider rule, --local-time {_option(wider)}, kept all year by a daily tick at "
                f"{describe_hours(hours, minute)} UTC"
            )
    return ""


def _option(rule: LocalTimeRule) -> str:
    parts = [
        f"{name}={bound:%H:%M}"
        for name, bound in ((NOT_BEFORE, rule.not_before), (NOT_AFTER, rule.not_after))
        if bound is not None
    ]
    return ",".join(parts + ([SAME_LOCAL_DATE] if rule.same_local_date else []))
