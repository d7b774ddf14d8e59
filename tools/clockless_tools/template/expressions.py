"""Tick times from EventBridge Scheduler expressions: `cron(...)` through aws-croniter, `rate(...)`
as arithmetic from an anchor (Scheduler starts a rate at the schedule's creation or StartDate)."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

from aws_croniter import AwsCroniter

_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


class ScheduleExpressionError(ValueError):
    pass


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("times must be timezone-aware")
    return moment.astimezone(UTC)


def rate_period(expression: str) -> timedelta | None:
    match = _RATE.match(expression.strip())
    if not match:
        return None
    amount, unit = int(match.group(1)), match.group(2).rstrip("s")
    if amount < 1 or (amount == 1) != (match.group(2) == unit):
        raise ScheduleExpressionError(f"{expression!r}: use 'rate(1 {unit})' or 'rate(N {unit}s)' with N > 1")
    return timedelta(seconds=amount * _UNIT_SECONDS[unit])


def _cron(expression: str) -> AwsCroniter:
    match = _CRON.match(expression.strip())
    if not match:
        raise ScheduleExpressionError(f"{expression!r} is neither cron(...) nor rate(...)")
    try:
        return AwsCroniter(match.group(1))
    except Exception as error:  # aws-croniter raises its own hierarchy for bad fields
        raise ScheduleExpressionError(f"{expression!r}: {error}") from None


def ticks_between(expression: str, start: datetime, end: datetime, *, anchor: datetime | None = None) -> list[datetime]:
    """Every tick in [start, end), in UTC."""
    start, end = _utc(start), _utc(end)
    period = rate_period(expression)
    if period is not None:
        first = _utc(anchor) if anchor is not None else start
        if first < start:
            first += period * -(-(start - first) // period)
        ticks = []
        moment = first
        while moment < end:
            ticks.append(moment)
            moment += period
        return ticks
    return [tick for tick in _cron(expression).get_all_schedule_bw_dates(start, end) if start <= tick < end]


def previous_tick(expression: str, at: datetime) -> datetime:
    """The last tick at or before `at`."""
    at = _utc(at)
    period = rate_period(expression)
    if period is not None:
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        return epoch + period * ((at - epoch) // period)
    return _utc(_cron(expression).get_prev(at, 1, inclusive=True)[0])


def next_ticks(expression: str, after: datetime, count: int) -> list[datetime]:
    after = _utc(after)
    period = rate_period(expression)
    if period is not None:
        first = previous_tick(expression, after) + period
        return [first + period * i for i in range(count)]
    return [_utc(t) for t in _cron(expression).get_next(after, count)]


def nominal_period(expression: str) -> timedelta:
    """The smallest gap between consecutive ticks over a year: the schedule's period."""
    period = rate_period(expression)
    if period is not None:
        return period
    start = datetime(2027, 1, 1, tzinfo=UTC)
    ticks = ticks_between(expression, start, start + timedelta(days=366))
    if len(ticks) < 2:
        raise ScheduleExpressionError(f"{expression!r} fires fewer than twice a year; it has no period")
    return min(b - a for a, b in itertools.pairwise(ticks))
