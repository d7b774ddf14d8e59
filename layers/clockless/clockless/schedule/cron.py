"""Scheduler's `cron(...)`: parsed against the guide's field table, evaluated on wall-clock dates.

This replaces aws-croniter (docs/schedules.md, "Defects found in aws-croniter", says why): its
`L` in day-of-week is weekday 0 rather than Saturday, it stops finding ticks that are decades apart,
and it accepts syntax the reference does not have (`L-3`, `L-2`) with guessed meanings while
failing `LW` with a Python parse error.

The grammar is the EventBridge cron reference's table (six fields; wildcards per field):

    minutes 0-59 `, - * /`  hours 0-23 `, - * /`  day-of-month 1-31 `, - * ? / L W`
    month 1-12|JAN-DEC `, - * /`  day-of-week 1-7|SUN-SAT `, - * ? L #`  year 1970-2199 `, - * /`

Where the guide is silent the choice is stated next to the code and in the conformance table
(tools/clockless_tools/template/conformance_*.py).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime, time
from typing import Final

from clockless.errors import ClocklessError

YEARS: Final = range(1970, 2200)
_MONTHS: Final = {name.upper(): i for i, name in enumerate(calendar.month_abbr) if name}
_DAYS: Final = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
_NAMES: Final = ("minutes", "hours", "day-of-month", "month", "day-of-week", "year")
_BOUNDS: Final = ((0, 59), (0, 23), (1, 31), (1, 12), (1, 7), (1970, 2199))
_ITEM: Final = re.compile(r"^(?P<start>\*|\w+)(?:-(?P<end>\w+))?(?:/(?P<step>\d+))?$")


class CronError(ClocklessError, ValueError):
    """A cron expression Scheduler refuses (or the guide does not define); says why and what to write."""


@dataclass(frozen=True)
class Cron:
    """The six fields, each a set of values, plus the day specials (`L`, `nW`, `n#k`, `nL`)."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    years: frozenset[int]
    months: frozenset[int]
    days: frozenset[int] | None  # day-of-month values; None when the field is `?`
    last_day: bool = False  # `L` in day-of-month
    weekday_near: int | None = None  # `nW`
    weekdays: frozenset[int] | None = None  # day-of-week values 1-7; None when the field is `?`
    nth: tuple[int, int] | None = None  # `n#k`: weekday n, k-th of the month
    last_of_week: int | None = None  # `nL`: the last weekday n of the month

    def matches_day(self, day: date) -> bool:
        if day.year not in self.years or day.month not in self.months:
            return False
        return day.day in self.days_of(day.year, day.month)

    def days_of(self, year: int, month: int) -> frozenset[int]:
        length = calendar.monthrange(year, month)[1]
        if self.last_day:
            return frozenset({length})
        if self.weekday_near is not None:
            return _nearest_weekday(year, month, self.weekday_near, length)
        if self.days is not None:
            return frozenset(d for d in self.days if d <= length)
        all_days = [date(year, month, d) for d in range(1, length + 1)]
        if self.nth is not None:
            weekday, k = self.nth
            found = [d.day for d in all_days if aws_weekday(d) == weekday]
            return frozenset(found[k - 1 : k])
        if self.last_of_week is not None:
            return frozenset([d.day for d in all_days if aws_weekday(d) == self.last_of_week][-1:])
        assert self.weekdays is not None
        return frozenset(d.day for d in all_days if aws_weekday(d) in self.weekdays)

    def walk(self, frm: date, *, forward: bool = True) -> Iterator[datetime]:
        """Every matching wall-clock minute from the day `frm` on (or back), in order; stops at the
        year field's bounds, so a schedule years away is found and one with no more ticks ends."""
        years = sorted((y for y in self.years if (y >= frm.year if forward else y <= frm.year)), reverse=not forward)
        months = sorted(self.months, reverse=not forward)
        clock = [time(h, m) for h in self.hours for m in self.minutes]
        if not forward:
            clock.reverse()
        for year in years:
            for month in months:
                if (year, month) < (frm.year, frm.month) if forward else (year, month) > (frm.year, frm.month):
                    continue
                for day in sorted(self.days_of(year, month), reverse=not forward):
                    moment = date(year, month, day)
                    if moment < frm if forward else moment > frm:
                        continue
                    for at in clock:
                        yield datetime.combine(moment, at)


def aws_weekday(day: date) -> int:
    """Scheduler's day-of-week number: 1 = Sunday ... 7 = Saturday."""
    return (day.weekday() + 1) % 7 + 1


def _nearest_weekday(year: int, month: int, n: int, length: int) -> frozenset[int]:
    # The guide: "3W specifies the weekday closest to the third day of the month". It is silent on
    # the month's edges; like Quartz, whose syntax this is, the answer stays in the month (1W on a
    # Saturday is Monday the 3rd) and a month without day n has no tick.
    if n > length:
        return frozenset()
    weekday = date(year, month, n).weekday()  # Monday 0 ... Sunday 6
    if weekday == 5:
        return frozenset({n - 1 if n > 1 else n + 2})
    if weekday == 6:
        return frozenset({n + 1 if n < length else n - 2})
    return frozenset({n})


def parse(text: str) -> Cron:
    """The fields inside `cron(...)`; CronError says what Scheduler would refuse and what to write."""
    fields = text.split()
    if len(fields) == 5:
        raise CronError(
            f'cron({text}) has five fields; Scheduler\'s API model says a cron expression "consists of six fields" '
            f"(minutes hours day-of-month month day-of-week year; day-of-week 1-7 from Sunday), and clockless follows "
            f"it where the user guide calls the year optional: write "
            f"cron({_one_question_mark([*fields, '*'])})"
        )
    if len(fields) != 6:
        raise CronError(
            f"cron({text}) has {len(fields)} fields; write six: minutes hours day-of-month month day-of-week year"
        )
    minute, hour, dom, month, dow, year = (f.upper() for f in fields)
    if (dom == "?") == (dow == "?"):
        fix = f"cron({_one_question_mark(fields)})"
        raise CronError(
            f'cron({text}): one of day-of-month and day-of-week must be ? and the other not (the cron reference: "If '
            "you specify a value or a * (asterisk) in one of the fields, you must use a ? (question mark) in the "
            f'other"): e.g. {fix}'
        )
    cron = Cron(
        minutes=tuple(sorted(_values(minute, 0, text))),
        hours=tuple(sorted(_values(hour, 1, text))),
        years=frozenset(_values(year, 5, text)),
        months=frozenset(_values(month, 3, text)),
        days=None,
        weekdays=None,
    )
    cron = _day_of_month(cron, dom, text) if dom != "?" else _day_of_week(cron, dow, text)
    if next(cron.walk(date(YEARS.start, 1, 1)), None) is None:
        raise CronError(
            f"cron({text}) never fires: no date of its years {_years(cron)} has the day it names in its month(s) "
            "(as day 30 or 31 in February): it would never invoke the target; name a day the month has (L is its "
            "last)"
        )
    return cron


def _years(cron: Cron) -> str:
    low, high = min(cron.years), max(cron.years)
    return str(low) if low == high else f"{low}-{high}"


def _one_question_mark(fields: list[str]) -> str:
    """The fields with exactly one of the two day fields `?`: the one that says less."""
    fields = list(fields)
    if fields[2] == "?" and fields[4] == "?":
        fields[2] = "*"
    elif fields[2] != "?" and fields[4] != "?":
        fields[4 if fields[4] == "*" or fields[2] != "*" else 2] = "?"
    return " ".join(fields)


def _day_of_month(cron: Cron, field: str, text: str) -> Cron:
    if field == "L":
        return replace(cron, last_day=True)
    if field.startswith("L") or "LW" in field:
        raise CronError(
            f"cron({text}): day-of-month {field!r} is not in the cron reference, which has L (the last day of the "
            "month) and nW (the weekday nearest day n) but no offsets and no last weekday (LW): use L (the last "
            "day, weekends too), or ? here and 6L in day-of-week (the last Friday)"
        )
    if field.endswith("W"):
        day = _number(field[:-1], 2, text)
        if not 1 <= day <= 31:
            raise CronError(f"cron({text}): day-of-month {field!r}: W takes one day 1-31, e.g. 15W")
        return replace(cron, weekday_near=day)
    _special_alone(field, 2, "LW", text)
    return replace(cron, days=frozenset(_values(field, 2, text)))


def _day_of_week(cron: Cron, field: str, text: str) -> Cron:
    for name, number in _DAYS.items():  # WED and SAT must not read as the W and L wildcards
        field = field.replace(name, str(number))
    if field == "L":
        # The guide: "The L wildcard in the Day-of-month or Day-of-week fields specifies the last day of the
        # month or week": alone in day-of-week it is Saturday (7), every week.
        return replace(cron, weekdays=frozenset({7}))
    if "#" in field:
        if "," in field or "-" in field:
            raise CronError(
                f"cron({text}): day-of-week {field!r}: the cron reference allows one expression with # "
                '("3#1,6#3" is invalid): use one, e.g. 3#1, and a second schedule for the other'
            )
        weekday, _, k = field.partition("#")
        number, nth = _weekday(weekday, text), _number(k, 4, text)
        if not 1 <= nth <= 5:
            raise CronError(f"cron({text}): day-of-week {field!r}: # counts the 1st to 5th such day of the month")
        return replace(cron, nth=(number, nth))
    if field.startswith("L-") or field.startswith("L"):
        raise CronError(
            f"cron({text}): day-of-week {field!r} is not in the cron reference, which has L alone (Saturday, the last "
            "day of the week), nL (its example 6L: the last Friday of the month) and n#k: e.g. 6L"
        )
    if field.endswith("L") and "," not in field and "-" not in field:
        # The cron reference's example cron(15 10 ? * 6L 2019-2022): "the last Friday of each month".
        return replace(cron, last_of_week=_weekday(field[:-1], text))
    if "W" in field:
        raise CronError(f"cron({text}): day-of-week {field!r}: W belongs to day-of-month (e.g. 15W), not day-of-week")
    if "/" in field:
        raise CronError(
            f"cron({text}): day-of-week {field!r}: the cron reference's table has no / in day-of-week "
            "(its wildcards are "
            ", - * ? L #): list the days, e.g. 2,4,6"
        )
    _special_alone(field, 4, "LW#", text)
    return replace(cron, weekdays=frozenset(_values(field, 4, text)))


def _special_alone(field: str, index: int, specials: str, text: str) -> None:
    if any(char in field for char in specials):
        raise CronError(
            f"cron({text}): {_NAMES[index]} {field!r}: {', '.join(specials)} stand alone in a field in the "
            "cron reference, "
            "never in a list or range"
        )


def _values(field: str, index: int, text: str) -> set[int]:
    low, high = _BOUNDS[index]
    found: set[int] = set()
    for item in field.split(","):
        match = _ITEM.match(item)
        if not match:
            raise CronError(f"cron({text}): {_NAMES[index]} item {item!r} is not a value, a-b, */n or a/n")
        start_text, end_text, step_text = match.group("start", "end", "step")
        if start_text == "*":
            if end_text is not None:
                raise CronError(f"cron({text}): {_NAMES[index]} item {item!r}: * takes no range")
            start, end = low, high
        else:
            start = _value(start_text, index, text)
            end = _value(end_text, index, text) if end_text is not None else (high if step_text else start)
        if end < start and index == 5:
            raise CronError(
                f"cron({text}): year range {item!r} runs backwards; years do not wrap: write {end_text}-{start_text}"
            )
        step = 1 if step_text is None else int(step_text)
        if step < 1:
            raise CronError(f"cron({text}): {_NAMES[index]} item {item!r}: the increment after / must be 1 or more")
        # A range that runs backwards wraps around the field: the reference's own example
        # cron(0/30 20-2 ? * MON-FRI *) runs "between 10:00 pm on the starting day to 2:00 am".
        span = list(range(start, end + 1)) if start <= end else [*range(start, high + 1), *range(low, end + 1)]
        found.update(span[::step])
    return found


def _value(word: str, index: int, text: str) -> int:
    low, high = _BOUNDS[index]
    names = _MONTHS if index == 3 else _DAYS if index == 4 else {}
    if word in names:
        return names[word]
    number = _number(word, index, text)
    if not low <= number <= high:
        raise CronError(f"cron({text}): {_NAMES[index]} {number} is outside {low}-{high}")
    return number


def _weekday(word: str, text: str) -> int:
    return _value(word, 4, text)


def _number(word: str, index: int, text: str) -> int:
    if not word.isdigit():
        raise CronError(f"cron({text}): {_NAMES[index]} {word!r} is not a number (or a name the field takes)")
    return int(word)
