"""The tick engine: when EventBridge Scheduler fires a schedule, computed as Scheduler computes it.

One `ScheduleSpec` holds everything Scheduler uses to place ticks: the expression (`cron(...)`,
`rate(...)` or `at(...)`), `ScheduleExpressionTimezone`, `StartDate` and `EndDate`, and, for a
`rate()` without a `StartDate`, the schedule's creation time (read from the deployed schedule).
Every part of clockless that needs ticks asks a spec and nothing else: the tools (status, backfill,
run-now, simulate, events, schedules check/show, the architecture rules) and, deployed in the
layer, the HTTP trigger, which refuses an instant that is not a tick. Plain Python and the
standard library (zoneinfo reads the layer's pinned `tzdata`): nothing here reads a clock or the
environment.

What Scheduler does, and so what this does (docs/schedules.md has the sources):
- `cron()` is evaluated in the schedule's zone. A local time that does not exist (the hour skipped
  when clocks go forward) is not fired; a local time that happens twice (clocks go back) is fired
  once, at its first occurrence. Fields follow Scheduler's cron table, `L`, `W`, `#` and `?`
  included, evaluated on wall-clock dates (`cron.py`; it replaced aws-croniter, see docs/schedules.md).
- `rate()` fires at the anchor and every period after it, in absolute time: `rate(1 day)` is 24
  hours, also across a DST change. The anchor is `StartDate`, else the schedule's creation
  (seconds and all: Scheduler's documented scheduled-time for such a schedule carries seconds).
- `at()` fires once at its wall-clock time in the zone; `StartDate`/`EndDate` do not apply to it.
- Recurring ticks fall in [StartDate, EndDate). Ticks are whole minutes (Scheduler's precision).

A job may also declare a local time in several zones (`local_clock.LocalClock`, not a Scheduler
property): its cron fires at every UTC hour that time can fall on, and only the instants at which
some zone's clock shows it are the job's ticks.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, Final, Literal
from zoneinfo import ZoneInfo

from clockless.errors import ArgumentError, ClocklessError
from clockless.schedule import cron as cron_fields
from clockless.schedule.local_clock import LocalClock
from clockless.schedule.zones import is_iana_zone
from clockless.tick import format_scheduled_time

_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$")
_RATE_LOOSE = re.compile(r"^rate\((.*)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_AT = re.compile(r"^at\((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\)$")
_UNIT_SECONDS: Final = {"minute": 60, "hour": 3600, "day": 86400}

Kind = Literal["cron", "rate", "at"]
# A local time falls on each of its cron's hours at least once a year, or the cron lists an hour too many.
_LOCAL_CLOCK_SEARCH: Final = timedelta(days=400)


class ScheduleExpressionError(ClocklessError, ValueError):
    """The schedule cannot be evaluated; the message says what is wrong and how to fix it."""


class RateAnchorUnknown(ScheduleExpressionError):
    """A `rate()` schedule without a `StartDate`: its ticks depend on when it was created."""


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ArgumentError("times must be timezone-aware")
    return moment.astimezone(UTC)


def parse_schedule_date(value: Any, *, field: str) -> datetime:
    """`StartDate`/`EndDate` as CloudFormation takes them: ISO-8601, in UTC unless an offset is given."""
    if isinstance(value, datetime):
        moment = value
    else:
        text = str(value).strip()
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ScheduleExpressionError(
                f"{field} {text[:40]!r} is not an ISO-8601 date-time such as 2027-01-01T00:00:00Z"
            ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def rate_period(expression: str) -> timedelta | None:
    """The period of a `rate()` expression; None for any other expression.

    The API model: "a value as a positive integer, and a unit with the following options: minute |
    minutes | hour | hours | day | days", with no rule pairing 1 with the singular; the guide's own
    DST section writes `rate(1 days)`. So any of the six units with any N of 1 or more."""
    match = _RATE.match(expression.strip())
    if not match:
        return None
    amount, unit = int(match.group(1)), match.group(2).rstrip("s")
    if amount < 1:
        raise ScheduleExpressionError(
            f"{expression!r}: the value must be a positive integer (the API model), e.g. 'rate(1 {unit})'"
        )
    return timedelta(seconds=amount * _UNIT_SECONDS[unit])


def expression_kind(expression: str) -> Kind:
    text = expression.strip()
    for kind in ("cron", "rate", "at"):
        if text.startswith(f"{kind}("):
            return kind
    raise ScheduleExpressionError(
        f"{expression[:60]!r} is none of cron(...), rate(...) or at(...), the expressions EventBridge Scheduler accepts"
    )


@dataclass(frozen=True)
class ScheduleSpec:
    """A schedule as EventBridge Scheduler evaluates it. Build with `ScheduleSpec.of(...)`, which validates."""

    expression: str
    timezone: str = "UTC"
    start_date: datetime | None = None
    end_date: datetime | None = None
    # rate() only, when there is no StartDate: the deployed schedule's creation time.
    created: datetime | None = None
    # The job's local time in its zones (its declaration's LocalTime): of the cron's instants, only
    # those at which one zone's clock shows it are ticks.
    local_clock: LocalClock | None = None

    @classmethod
    def of(
        cls,
        expression: str,
        *,
        timezone: str | None = None,
        start_date: Any = None,
        end_date: Any = None,
        created: datetime | None = None,
        local_clock: LocalClock | None = None,
    ) -> ScheduleSpec:
        zone = timezone or "UTC"
        if not is_iana_zone(zone):
            raise ScheduleExpressionError(f"ScheduleExpressionTimezone {zone!r} is not an IANA time zone")
        spec = cls(
            expression=expression.strip(),
            timezone=zone,
            start_date=None if start_date is None else parse_schedule_date(start_date, field="StartDate"),
            end_date=None if end_date is None else parse_schedule_date(end_date, field="EndDate"),
            created=None if created is None else _utc(created),
            local_clock=local_clock,
        )
        spec.validate()
        return spec

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, Any], *, created: datetime | None = None, local_clock: LocalClock | None = None
    ) -> ScheduleSpec:
        """From a ScheduleV2 event's (or an AWS::Scheduler::Schedule's) literal properties."""
        expression = properties.get("ScheduleExpression", properties.get("Schedule"))
        if not isinstance(expression, str):
            raise ScheduleExpressionError("ScheduleExpression is not a literal string")
        for name in ("ScheduleExpressionTimezone", "StartDate", "EndDate"):
            value = properties.get(name)
            if value is not None and not isinstance(value, (str, datetime)):
                raise ScheduleExpressionError(f"{name} is not a literal value (got {value!r}); write it out")
        return cls.of(
            expression,
            timezone=properties.get("ScheduleExpressionTimezone"),
            start_date=properties.get("StartDate"),
            end_date=properties.get("EndDate"),
            created=created,
            local_clock=local_clock,
        )

    # ------------------------------------------------------------------ validation
    @property
    def kind(self) -> Kind:
        return expression_kind(self.expression)

    @cached_property
    def _zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @cached_property
    def _cron(self) -> cron_fields.Cron:
        match = _CRON.match(self.expression)
        if not match:
            raise ScheduleExpressionError(f"{self.expression!r}: expected cron(minutes hours day month weekday year)")
        try:
            return cron_fields.parse(match.group(1))
        except cron_fields.CronError as error:
            raise ScheduleExpressionError(str(error)) from None

    @cached_property
    def _at(self) -> datetime:
        match = _AT.match(self.expression)
        if not match:
            raise ScheduleExpressionError(f"{self.expression!r}: expected at(yyyy-mm-ddThh:mm:ss)")
        try:
            year, month, day, hour, minute, second = (int(part) for part in match.groups())
            # Wall-clock time in the schedule's zone, naive until the zone places it.
            wall = datetime(year, month, day, hour, minute, second)  # noqa: DTZ001
        except ValueError as error:
            raise ScheduleExpressionError(f"{self.expression!r}: {error}") from None
        if wall.second:
            raise ScheduleExpressionError(f"{self.expression!r}: clockless ticks are whole minutes; use :00 seconds")
        moment = _wall_to_utc(wall, self._zone)
        if moment is None:
            raise ScheduleExpressionError(
                f"{self.expression!r}: {wall:%Y-%m-%d %H:%M} does not exist in {self.timezone} (clocks go forward)"
            )
        return moment

    def validate(self) -> None:
        kind = self.kind
        if kind == "cron":
            self._cron  # noqa: B018 - parses the fields, raising on a bad one
        elif kind == "rate":
            if rate_period(self.expression) is None:
                raise ScheduleExpressionError(
                    f"{self.expression!r}: expected rate(N minute(s)|hour(s)|day(s)) with a whole N"
                )
            if self.start_date is not None and self.start_date.second + self.start_date.microsecond:
                raise ScheduleExpressionError(
                    f"StartDate {self.start_date.isoformat()} anchors {self.expression}: clockless ticks are whole "
                    "minutes, so give it :00 seconds"
                )
        else:
            self._at  # noqa: B018
        if self.local_clock is not None and kind != "cron":
            raise ScheduleExpressionError(
                f"{self.expression!r}: a local time ({self.local_clock.describe()}) is kept by a cron at the UTC "
                "hours it falls on; write the schedule as that cron"
            )
        if self.start_date is not None and self.end_date is not None and self.end_date <= self.start_date:
            raise ScheduleExpressionError(
                f"EndDate {self.end_date.isoformat()} is not after StartDate {self.start_date.isoformat()}"
            )

    # ------------------------------------------------------------------ ticks
    @property
    def rate_anchor(self) -> datetime:
        """The first tick of a rate() schedule: its StartDate, else its creation, seconds and all (the
        guide's scheduled-time for a rate() without StartDate is `2022-03-22T18:59:43Z`)."""
        if self.start_date is not None:
            return self.start_date
        if self.created is not None:
            return self.created.replace(microsecond=0)
        raise RateAnchorUnknown(
            f"{self.expression} has no StartDate, so its ticks depend on when the schedule was created: "
            "declare StartDate: !Ref <an anchor parameter> in template.yaml (rule rate-anchored), or pass --stack "
            "to read the deployed schedule"
        )

    def _bounds(self, start: datetime, end: datetime) -> tuple[datetime, datetime]:
        if self.kind != "at":
            if self.start_date is not None:
                start = max(start, self.start_date)
            if self.end_date is not None:
                end = min(end, self.end_date)
        return start, end

    def ticks_between(self, start: datetime, end: datetime) -> list[datetime]:
        """Every tick in [start, end), in UTC, oldest first."""
        start, end = self._bounds(_utc(start), _utc(end))
        if end <= start:
            return []
        kind = self.kind
        if kind == "at":
            return [self._at] if start <= self._at < end else []
        if kind == "rate":
            period = rate_period(self.expression)
            assert period is not None
            anchor = self.rate_anchor
            first = anchor if anchor >= start else anchor + period * -(-(start - anchor) // period)
            return list(itertools.takewhile(lambda t: t < end, (first + period * i for i in itertools.count())))
        return self._cron_ticks(start, end)

    def _cron_ticks(self, start: datetime, end: datetime) -> list[datetime]:
        ticks = []
        for moment in self._cron_walk(start, forward=True):
            if moment >= end:
                break
            if moment >= start:
                ticks.append(moment)
        return ticks

    def _cron_walk(self, around: datetime, *, forward: bool) -> Iterator[datetime]:
        """The cron's ticks in UTC from a day before `around` on (or a day after it back), in order.
        Wall-clock times map to UTC monotonically (a skipped one is dropped, a repeated one is its
        first occurrence), so the order holds across DST changes."""
        zone = self._zone
        wall_day = around.astimezone(zone).date() + (timedelta(days=-1) if forward else timedelta(days=1))
        clock = self.local_clock
        last = around
        for wall in self._cron.walk(wall_day, forward=forward):
            moment = _wall_to_utc(wall, zone)
            if moment is None:
                continue
            if clock is None or clock.serves(moment):
                last = moment
                yield moment
            elif abs(moment - last) > _LOCAL_CLOCK_SEARCH:
                # A year and more of the cron's instants without the local time in any zone: none will.
                return

    def previous_tick(self, at: datetime) -> datetime | None:
        """The last tick at or before `at`; None when the schedule has none."""
        at = _utc(at)
        kind = self.kind
        if kind == "at":
            return self._at if self._at <= at else None
        if self.end_date is not None and at >= self.end_date:
            at = self.end_date - timedelta(microseconds=1)
        if kind == "rate":
            anchor = self.rate_anchor
            if at < anchor:
                return None
            period = rate_period(self.expression)
            assert period is not None
            return anchor + period * ((at - anchor) // period)
        for moment in self._cron_walk(at, forward=False):
            if self.start_date is not None and moment < self.start_date:
                return None
            if moment <= at:
                return moment
        return None

    def is_tick(self, moment: datetime) -> bool:
        """Whether `moment` is one of the schedule's ticks (to the second: a rate() anchored on a
        creation time keeps its seconds)."""
        return moment in self.ticks_between(moment, moment + timedelta(minutes=1))

    def ticks_around(self, moment: datetime) -> tuple[datetime | None, datetime | None]:
        """The last tick at or before `moment` and the first after it (None where there is none):
        what a refusal of an instant that is not a tick names."""
        after = self.next_ticks(moment, 1)
        return self.previous_tick(moment), after[0] if after else None

    def next_ticks(self, after: datetime, count: int) -> list[datetime]:
        """Up to `count` ticks strictly after `after` (fewer when the schedule ends)."""
        after = _utc(after)
        kind = self.kind
        if kind == "at":
            return [self._at][:count] if self._at > after else []
        if self.start_date is not None and after < self.start_date:
            after = self.start_date - timedelta(microseconds=1)
        if kind == "rate":
            period = rate_period(self.expression)
            assert period is not None
            anchor = self.rate_anchor
            first = anchor if anchor > after else anchor + period * ((after - anchor) // period + 1)
            found = (first + period * i for i in range(count))
        else:
            found = (moment for moment in self._cron_walk(after, forward=True) if moment > after)
        ticks: list[datetime] = []
        for moment in found:
            if len(ticks) == count or (self.end_date is not None and moment >= self.end_date):
                break
            ticks.append(moment)
        return ticks

    def gaps(self) -> list[timedelta]:
        """The gaps between consecutive ticks over a year (for a rate(), its period)."""
        return list(self._gaps)

    @cached_property
    def _gaps(self) -> tuple[timedelta, ...]:
        period = rate_period(self.expression)
        if period is not None:
            return (period,)
        if self.kind == "at":
            return ()
        return _year_gaps(self.expression, self.timezone, self.local_clock)

    def nominal_period(self) -> timedelta:
        """The smallest gap between consecutive ticks over a year: how soon the next tick can follow."""
        gaps = self.gaps()
        if not gaps:
            raise ScheduleExpressionError(f"{self.expression!r} fires fewer than twice a year; it has no period")
        return min(gaps)

    def longest_gap(self) -> timedelta:
        """The largest gap between consecutive ticks over a year: how long a healthy job can be silent."""
        gaps = self.gaps()
        if not gaps:
            raise ScheduleExpressionError(f"{self.expression!r} fires fewer than twice a year; it has no period")
        return max(gaps)


# Keyed by what the rhythm depends on: the rules, the CLI and the tests ask it of the same few
# expressions again and again (each a year of ticks, 35,000 for every 15 minutes).
@functools.lru_cache(maxsize=256)
def _year_gaps(expression: str, timezone: str, local_clock: LocalClock | None) -> tuple[timedelta, ...]:
    """The distinct gaps between a cron's consecutive ticks over a year, without its bounds."""
    plain = ScheduleSpec(expression, timezone, local_clock=local_clock)
    # A year from the first tick on or after a fixed date: a year field may start later.
    first = plain.next_ticks(datetime(2026, 12, 31, 23, 59, tzinfo=UTC), 1)
    if not first:
        return ()
    ticks = plain.ticks_between(first[0], first[0] + timedelta(days=366))
    return tuple(sorted({b - a for a, b in itertools.pairwise(ticks)}))


def _wall_to_utc(wall: datetime, zone: ZoneInfo) -> datetime | None:
    """The UTC instant of a naive wall-clock time in `zone`: its first occurrence when clocks go back,
    None when clocks go forward over it."""
    moment = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if moment.astimezone(zone).replace(tzinfo=None) != wall:
        return None
    return moment


def not_a_tick(spec: ScheduleSpec, job: str, moment: datetime) -> str:
    """Why `moment` is refused as a tick of `job`, naming the scheduled times before and after it:
    the one wording run-now and the HTTP trigger give (each adds how its caller insists)."""
    around = ", ".join(
        f"{side} {'none' if tick is None else format_scheduled_time(tick)}"
        for side, tick in zip(("before it", "after it"), spec.ticks_around(moment), strict=True)
    )
    instant = format_scheduled_time(moment)
    clock = "" if spec.local_clock is None else f" at {spec.local_clock.describe()}"
    return f"{instant} is not a tick of {job}'s schedule {spec.expression}{clock} (scheduled times: {around})"


def utc_spec(expression: str) -> ScheduleSpec:
    """A spec of `expression` alone, in UTC with no bounds: for questions about the expression itself."""
    return ScheduleSpec.of(expression)


def nominal_period(expression: str) -> timedelta:
    return utc_spec(expression).nominal_period()
