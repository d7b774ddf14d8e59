"""Local-time rules for UTC schedules, checked over a year of ticks.

Schedules in template.yaml fire in UTC; what a job needs is stated in the time zones it serves
("after 04:00 and on the same business date everywhere"). Each scheduled function declares both
in its resource `Metadata`, next to its schedule:

    WindowGenerationFunction:
      Type: AWS::Serverless::Function
      Metadata:
        clockless:
          operating_time_zones: !Ref OperatingTimeZones   # or a literal list of IANA zones
          local_time_rule: {not_before: "04:00", same_local_date: true}   # or: none

`check_template` expands every schedule over one year from a start date (a year always holds both
DST transitions of every zone), applies the rule to every tick in every zone and suggests the UTC
hours that satisfy the rule all year. Pure: it reads only the loaded template and the tz database.
"""

from __future__ import annotations

import copy
import functools
import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from clockless_tools.schedule import ScheduleExpressionError
from clockless_tools.template import Function, Schedule, Template, TemplateError, resolve

METADATA_KEY = "clockless"
ZONES_KEY = "operating_time_zones"
RULE_KEY = "local_time_rule"
NO_RULE = "none"
REQUIRED_SCHEDULE_TIMEZONE = "UTC"
# A function that reads its zones from the environment must read the zones it declares.
ZONES_ENVIRONMENT_VARIABLE = "OPERATING_TIME_ZONES"

# Rule names, as reported and in --json.
NOT_BEFORE = "not_before"
NOT_AFTER = "not_after"
SAME_LOCAL_DATE = "same_local_date"
UTC_SCHEDULE = "utc_schedule"
DECLARED = "declared"
ZONES_MATCH_ENVIRONMENT = "zones_match_environment"

_RULE_KEYS = (NOT_BEFORE, NOT_AFTER, SAME_LOCAL_DATE)
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
# Offsets change at most a few times a year; a daily probe cannot step over two changes.
_OFFSET_PROBE = timedelta(days=1)


class DeclarationError(TemplateError):
    """A time-zone declaration in template.yaml is malformed; the message names the function and key."""


@dataclass(frozen=True, slots=True)
class LocalTimeRule:
    """What every tick must look like in every operating zone (bounds inclusive, to the minute)."""

    not_before: time | None = None
    not_after: time | None = None
    same_local_date: bool = False

    def describe(self) -> str:
        parts = []
        if self.not_before is not None:
            parts.append(f"at or after {self.not_before:%H:%M} local")
        if self.not_after is not None:
            parts.append(f"at or before {self.not_after:%H:%M} local")
        if self.same_local_date:
            parts.append("on the same local date in every zone")
        return " and ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            NOT_BEFORE: None if self.not_before is None else f"{self.not_before:%H:%M}",
            NOT_AFTER: None if self.not_after is None else f"{self.not_after:%H:%M}",
            SAME_LOCAL_DATE: self.same_local_date,
        }


@dataclass(frozen=True, slots=True)
class Breach:
    """One zone in which one tick breaks one part of a rule."""

    rule: str
    zone: str
    local_time: datetime
    detail: str
    # For same_local_date: this zone's local date minus the date most zones share.
    days_off: int = 0


def local_times(tick: datetime, zones: Sequence[str]) -> dict[str, datetime]:
    """The tick's wall-clock time in each zone."""
    return {zone: tick.astimezone(ZoneInfo(zone)) for zone in zones}


def shared_date(local: Mapping[str, datetime]) -> date:
    """The local date most zones are on; on a tie, the date of the first zone among the tied."""
    counts = Counter(moment.date() for moment in local.values())
    most = max(counts.values())
    return next(moment.date() for moment in local.values() if counts[moment.date()] == most)


def breaches(rule: LocalTimeRule, tick: datetime, zones: Sequence[str]) -> list[Breach]:
    """Every way `tick` breaks `rule` in `zones`, in zone order; empty when it keeps the rule."""
    local = local_times(tick, zones)
    found: list[Breach] = []
    reference = shared_date(local) if rule.same_local_date else None
    for zone, moment in local.items():
        clock = moment.time().replace(tzinfo=None)
        if rule.not_before is not None and clock < rule.not_before:
            found.append(Breach(NOT_BEFORE, zone, moment, f"before {rule.not_before:%H:%M} local"))
        if rule.not_after is not None and clock > rule.not_after.replace(second=59, microsecond=999999):
            found.append(Breach(NOT_AFTER, zone, moment, f"after {rule.not_after:%H:%M} local"))
        if reference is not None and moment.date() != reference:
            days_off = (moment.date() - reference).days
            found.append(Breach(SAME_LOCAL_DATE, zone, moment, _date_detail(days_off), days_off=days_off))
    return found


def _date_detail(days_off: int) -> str:
    if abs(days_off) == 1:
        return f"a day {'behind' if days_off < 0 else 'ahead of'} most zones"
    return f"{abs(days_off)} days {'behind' if days_off < 0 else 'ahead of'} most zones"


# ---------------------------------------------------------------- the declaration in template.yaml


@dataclass(frozen=True, slots=True)
class TimeDeclaration:
    """A scheduled function's operating zones and its local-time rule (None: declared `none`)."""

    function_id: str
    zones: tuple[str, ...]
    zones_parameter: str | None
    rule: LocalTimeRule | None


def missing_declaration_keys(function: Function) -> list[str]:
    """The declaration keys `function`'s Metadata lacks (other tools' keys under `clockless` are fine)."""
    block = function.metadata.get(METADATA_KEY)
    if block is not None and not isinstance(block, Mapping):
        raise DeclarationError(f"{function.logical_id}.Metadata.{METADATA_KEY}: expected a mapping, got {block!r}")
    block = block or {}
    return [key for key in (ZONES_KEY, RULE_KEY) if key not in block]


def read_declaration(function: Function, template: Template) -> TimeDeclaration:
    """Parse and validate the declaration; DeclarationError names the key that is wrong."""
    missing = missing_declaration_keys(function)
    where = f"{function.logical_id}.Metadata.{METADATA_KEY}"
    if missing:
        raise DeclarationError(f"{where}: missing {', '.join(missing)}")
    block = function.metadata[METADATA_KEY]
    zones, parameter = _read_zones(block[ZONES_KEY], template, f"{where}.{ZONES_KEY}")
    rule = _read_rule(block[RULE_KEY], f"{where}.{RULE_KEY}")
    return TimeDeclaration(function.logical_id, zones, parameter, rule)


def _read_zones(value: Any, template: Template, where: str) -> tuple[tuple[str, ...], str | None]:
    parameter = None
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        parameter = str(value["Ref"])
        if parameter not in (template.document.get("Parameters") or {}):
            raise DeclarationError(f"{where}: !Ref {parameter} names no parameter of the template")
        value = template.parameter_default(parameter)
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DeclarationError(
            f"{where}: expected a list of IANA zones or !Ref to a CommaDelimitedList parameter, got {value!r}"
        )
    zones = tuple(item.strip() for item in value)
    if not zones or "" in zones:
        raise DeclarationError(f"{where}: names an empty zone in {list(zones)!r}")
    for zone in zones:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise DeclarationError(f"{where}: {zone!r} is not an IANA time zone") from None
    repeated = sorted(zone for zone, count in Counter(zones).items() if count > 1)
    if repeated:
        raise DeclarationError(f"{where}: lists {', '.join(repeated)} more than once")
    return zones, parameter


def _read_rule(value: Any, where: str) -> LocalTimeRule | None:
    if value == NO_RULE:
        return None
    if not isinstance(value, Mapping):
        raise DeclarationError(f"{where}: expected {NO_RULE!r} or a mapping of {', '.join(_RULE_KEYS)}; got {value!r}")
    unknown = sorted(str(key) for key in value if key not in _RULE_KEYS)
    if unknown:
        raise DeclarationError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_RULE_KEYS)}")
    same_local_date = value.get(SAME_LOCAL_DATE, False)
    if not isinstance(same_local_date, bool):
        raise DeclarationError(f"{where}.{SAME_LOCAL_DATE}: expected true or false, got {same_local_date!r}")
    rule = LocalTimeRule(
        not_before=_read_clock(value.get(NOT_BEFORE), f"{where}.{NOT_BEFORE}"),
        not_after=_read_clock(value.get(NOT_AFTER), f"{where}.{NOT_AFTER}"),
        same_local_date=same_local_date,
    )
    if rule.not_before is None and rule.not_after is None and not rule.same_local_date:
        raise DeclarationError(f"{where}: checks nothing; write {NO_RULE!r} if no local time matters to the job")
    if rule.not_before is not None and rule.not_after is not None and rule.not_before > rule.not_after:
        raise DeclarationError(f"{where}: {NOT_BEFORE} {rule.not_before:%H:%M} is later than {NOT_AFTER}")
    return rule


def _read_clock(value: Any, where: str) -> time | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        # YAML 1.1 reads an unquoted 04:00 as the base-60 integer 240.
        raise DeclarationError(f'{where}: {value!r} is a number; quote the time, e.g. "04:00"')
    match = _CLOCK.match(str(value))
    if match is None:
        raise DeclarationError(f'{where}: {value!r} is not a 24-hour HH:MM time such as "04:00"')
    return time(int(match.group(1)), int(match.group(2)))


def with_parameter_overrides(template: Template, overrides: Mapping[str, str]) -> Template:
    """The template as a deploy with `--parameter-overrides` sees it: the overrides become the defaults."""
    if not overrides:
        return template
    document = copy.deepcopy(dict(template.document))
    parameters = document.get("Parameters") or {}
    for name, value in overrides.items():
        if name not in parameters:
            known = ", ".join(sorted(parameters)) or "none"
            raise TemplateError(f"parameter override {name}: the template declares no such parameter (known: {known})")
        parameters[name]["Default"] = value
    return Template(path=template.path, document=document)


# ---------------------------------------------------------------- checking a year


@dataclass(frozen=True, slots=True)
class Violation:
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
            "tick": None if self.tick is None else iso_utc(self.tick),
            "zone": self.zone,
            "local_time": None if self.local_time is None else self.local_time.isoformat(),
            "utc_offset": None if self.local_time is None else utc_offset(self.local_time),
        }


@dataclass(frozen=True, slots=True)
class ViolationGroup:
    """Violations alike but for their tick: same job, rule, zone, local clock time and UTC offset."""

    violations: tuple[Violation, ...]

    @property
    def first(self) -> Violation:
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
class ScheduledEvent:
    """A schedule of a function, and what its function declares about time."""

    job: str
    function_id: str
    event_id: str
    expression: str
    timezone: str | None
    declaration: TimeDeclaration | None

    @property
    def zones(self) -> tuple[str, ...]:
        return () if self.declaration is None else self.declaration.zones

    @property
    def rule(self) -> LocalTimeRule | None:
        return None if self.declaration is None else self.declaration.rule

    def describe(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "function": self.function_id,
            "event": self.event_id,
            "expression": self.expression,
            "timezone": self.timezone,
            "zones": None if self.declaration is None else list(self.zones),
            "zones_parameter": None if self.declaration is None else self.declaration.zones_parameter,
            "rule": None if self.rule is None else self.rule.as_dict(),
        }


@dataclass(frozen=True, slots=True)
class ScheduleCheck(ScheduledEvent):
    """One schedule's year: what was declared, how many ticks were checked, what broke, what would fit."""

    ticks_checked: int
    violations: tuple[Violation, ...]
    # Why the ticks were not expanded (no rule, no declaration, not UTC); None when they were.
    not_expanded: str | None
    suggested_hours: tuple[int, ...] | None
    suggestion_minute: int

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

    def groups(self) -> list[ViolationGroup]:
        grouped: dict[tuple[Any, ...], list[Violation]] = {}
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
            "violations": [v.as_dict() for v in self.violations],
        }


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """A zone's UTC offset changing (a DST transition) at a UTC instant."""

    zone: str
    at: datetime
    before: str
    after: str


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
    def violations(self) -> list[Violation]:
        return [v for check in self.schedules for v in check.violations]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "window": {"start": iso_utc(self.start), "end": iso_utc(self.end)},
            "zones": {
                zone: [{"at": iso_utc(c.at), "before": c.before, "after": c.after} for c in changes]
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


def job_name(schedule: Schedule) -> str:
    """The job the schedule's Input names, or `<Function>.<Event>` when it names none."""
    try:
        return schedule.job
    except TemplateError:
        return f"{schedule.function_id}.{schedule.event_id}"


def _check_schedule(
    function: Function, schedule: Schedule, template: Template, begin: datetime, end: datetime
) -> ScheduleCheck:
    job = job_name(schedule)

    def violation(rule: str, detail: str, **where: Any) -> Violation:
        return Violation(job, function.logical_id, schedule.event_id, rule, detail, **where)

    violations: list[Violation] = []
    timezone_ok = _written_in_utc(function, schedule)
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
            raise _expression_error(schedule, error) from None
        for tick in ticks:
            violations.extend(
                violation(b.rule, b.detail, tick=tick, zone=b.zone, local_time=b.local_time, days_off=b.days_off)
                for b in breaches(rule, tick, declaration.zones)
            )
    minute = fixed_minute(schedule.expression)
    suggested = (
        None
        if declaration is None or rule is None
        else suggest_utc_hours(rule, declaration.zones, begin, end, minute=minute)
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
    )


def _written_in_utc(function: Function, schedule: Schedule) -> bool:
    """EventBridge rules (`Schedule`) are always UTC; a `ScheduleV2` must say UTC itself.

    Scheduler would default a missing zone to UTC too, but the template states it so that nobody
    reads the cron in a zone it is not in."""
    events = function.properties.get("Events") or {}
    event_type = (events.get(schedule.event_id) or {}).get("Type")
    return event_type != "ScheduleV2" or schedule.timezone == REQUIRED_SCHEDULE_TIMEZONE


def _expression_error(schedule: Schedule, error: ScheduleExpressionError) -> DeclarationError:
    if isinstance(error, TemplateError):  # already names the function and event
        return DeclarationError(str(error))
    return DeclarationError(f"{schedule.function_id}.Events.{schedule.event_id}.ScheduleExpression: {error}")


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


# ---------------------------------------------------------------- suggestions and offsets


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
        following = min(probe + _OFFSET_PROBE, end)
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


# ---------------------------------------------------------------- the viewer


@dataclass(frozen=True, slots=True)
class UpcomingTicks(ScheduledEvent):
    """A schedule's next ticks, each in UTC and in every operating zone, with any breach of its rule."""

    ticks: tuple[datetime, ...]
    breaches: Mapping[datetime, tuple[Breach, ...]]
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.describe(),
            "note": self.note,
            "ticks": [
                {
                    "utc": iso_utc(tick),
                    "local": {zone: moment.isoformat() for zone, moment in local_times(tick, self.zones).items()},
                    "breaches": [
                        {"rule": b.rule, "zone": b.zone, "detail": b.detail} for b in self.breaches.get(tick, ())
                    ],
                }
                for tick in self.ticks
            ],
        }


def upcoming_ticks(template: Template, *, after: datetime, count: int) -> list[UpcomingTicks]:
    """Each schedule's next `count` ticks strictly after `after`."""
    if count < 1:
        raise ValueError("count must be at least 1")
    shown = []
    for function in template.scheduled_functions.values():
        declaration = None if missing_declaration_keys(function) else read_declaration(function, template)
        for schedule in function.schedules:
            common: dict[str, Any] = {
                "job": job_name(schedule),
                "function_id": function.logical_id,
                "event_id": schedule.event_id,
                "expression": schedule.expression,
                "timezone": schedule.timezone,
                "declaration": declaration,
            }
            try:
                ticks = tuple(schedule.spec(template).next_ticks(after, count))
            except ScheduleExpressionError as error:
                raise _expression_error(schedule, error) from None
            rule = None if declaration is None else declaration.rule
            found = {t: tuple(b) for t in ticks if rule and declaration and (b := breaches(rule, t, declaration.zones))}
            note = None if declaration is not None else f"no Metadata.{METADATA_KEY} declaration: UTC only"
            if not _written_in_utc(function, schedule):
                note = (
                    f"ScheduleExpressionTimezone is {schedule.timezone or 'missing'}, not UTC: ticks placed in that "
                    "zone, where a cron skips the hour clocks jump over"
                )
            shown.append(UpcomingTicks(**common, ticks=ticks, breaches=found, note=note))
    return shown


def iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_offset(local: datetime) -> str:
    """`UTC-08:00`: the offset of an aware local time."""
    offset = local.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"
