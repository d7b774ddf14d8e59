"""The rows of the conformance table (clockless_tools.template.conformance says how they are used).

Quotes are AWS's words, from the page `source` names. Expected ticks are UTC and were worked out by
hand: weekdays from the calendar, offsets from the zone's rules (New York -5/-4, Adelaide +9:30/+10:30,
Lord Howe +10:30/+11, Auckland +12/+13, London 0/+1, Kolkata +5:30).
"""

from __future__ import annotations

from typing import Final

from clockless_tools.template.conformance import SILENT, Case

_FIELDS = "The cron reference's table lists this field's values and wildcards"
_COMMA = (
    "The , (comma) wildcard includes additional values. In the Month field, JAN,FEB,MAR includes January, February, "
    "and March."
)
_DASH = (
    "The - (dash) wildcard specifies ranges. In the Day field, 1-15 includes days 1 through 15 of the specified month."
)
_STAR = "The * (asterisk) wildcard includes all values in the field. In the Hours field, * includes every hour."
_SLASH = (
    "The / (slash) wildcard specifies increments. In the Minutes field, you could enter 1/10 to specify every tenth "
    "minute, starting from the first minute of the hour (for example, the 11th, 21st, and 31st minute, and so on)."
)
_QUESTION = (
    "The ? (question mark) wildcard specifies any. In the Day-of-month field you could enter 7 and if any day of the "
    "week was acceptable, you could enter ? in the Day-of-week field."
)
_L = "The L wildcard in the Day-of-month or Day-of-week fields specifies the last day of the month or week."
_W = "In the Day-of-month field, 3W specifies the weekday closest to the third day of the month."
_HASH = "For example, 3#2 would be the second Tuesday of the month"
_ONE_HASH = "If you use a '#' character, you can define only one expression in the day-of-week field."
_DAY_FIELDS = (
    "If you specify a value or a * (asterisk) in one of the fields, you must use a ? (question mark) in the other."
)
_TABLE = "Year: 1970-2199; Day-of-week: 1-7 or SUN-SAT; Minutes: 0-59 (the cron reference's field table)"
_SKIPPED = "your schedule invocation gets skipped if the cron expression falls on a non-existent date and time."
_REPEATED = (
    "When the time shifts back in the Fall, your schedule runs only once and doesn't repeat its invocation. (The "
    'Scheduler guide\'s example: it runs "once at 2:30 a.m. before the shift occurs".)'
)
_RATE_DAY = (
    "days represents a 24-hour duration on the clock. When Daylight Saving Time shortens a day to 23 hours, or extends "
    "it to 25 hours, the EventBridge Scheduler evaluates the rate expression 24 hours after the schedule's last "
    "invocation."
)
_START = (
    "StartDate: The date, in UTC, after which the schedule can begin invoking its target. Depending on the schedule's "
    "recurrence expression, invocations might occur on, or after, the StartDate you specify."
)
_END = "EndDate: The date, in UTC, before which the schedule can invoke its target."
_ONE_TIME = "EventBridge Scheduler ignores StartDate for one-time schedules. (EndDate likewise.)"
_NO_START = (
    "If you do not provide a StartDate for a rate-based schedule, your schedule starts invoking the target immediately."
)
_UNITS = (
    "A rate expression consists of a value as a positive integer, and a unit with the following options: minute | "
    "minutes | hour | hours | day | days"
)
_MINUTE_ONLY = (
    "Not an AWS refusal: Scheduler accepts seconds; clockless ticks are whole minutes (docs/tick-contract.md), so "
    "the engine refuses"
)


def _utc(*ticks: str) -> tuple[str, ...]:
    return ticks


CASES: Final[tuple[Case, ...]] = (
    # ------------------------------------------------------------ the cron reference's examples
    Case(
        "example: 10:00 every day",
        "cron(0 10 * * ? *)",
        "eb-cron",
        "Run at 10:00 am (UTC+0) every day",
        _utc("2027-01-01T10:00", "2027-01-02T10:00"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
    ),
    Case(
        "example: 12:15 every day",
        "cron(15 12 * * ? *)",
        "eb-cron",
        "Run at 12:15 pm (UTC+0) every day",
        _utc("2027-01-01T12:15", "2027-01-02T12:15"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
    ),
    Case(
        "example: weekdays 18:00",
        "cron(0 18 ? * MON-FRI *)",
        "eb-cron",
        "Run at 6:00 pm (UTC+0) every Monday through Friday",
        _utc("2027-01-01T18:00", "2027-01-04T18:00"),
        ("2027-01-01T00:00", "2027-01-05T00:00"),
    ),
    Case(
        "example: 1st of the month",
        "cron(0 8 1 * ? *)",
        "eb-cron",
        "Run at 8:00 am (UTC+0) every 1st day of the month",
        _utc("2027-01-01T08:00", "2027-02-01T08:00", "2027-03-01T08:00"),
        ("2027-01-01T00:00", "2027-03-02T00:00"),
    ),
    Case(
        "example: every 15 minutes",
        "cron(0/15 * * * ? *)",
        "eb-cron",
        "Run every 15 minutes",
        _utc("2027-01-01T00:00", "2027-01-01T00:15", "2027-01-01T00:30", "2027-01-01T00:45"),
        ("2027-01-01T00:00", "2027-01-01T01:00"),
    ),
    Case(
        "example: every 10 minutes on weekdays",
        "cron(0/10 * ? * MON-FRI *)",
        "eb-cron",
        "Run every 10 minutes Monday through Friday",
        _utc("2027-01-04T00:00", "2027-01-04T00:10", "2027-01-04T00:20"),
        ("2027-01-03T23:30", "2027-01-04T00:30"),
    ),
    Case(
        "example: every 5 minutes 8:00-17:55",
        "cron(0/5 8-17 ? * MON-FRI *)",
        "eb-cron",
        "Run every 5 minutes Monday through Friday between 8:00 am and 5:55 pm (UTC+0)",
        _utc("2027-01-04T17:45", "2027-01-04T17:50", "2027-01-04T17:55"),
        ("2027-01-04T17:45", "2027-01-04T18:05"),
    ),
    Case(
        "example: hours that wrap past midnight",
        "cron(0/30 20-2 ? * MON-FRI *)",
        "eb-cron",
        "Run every 30 minutes Monday through Friday between 10:00 pm on the starting day to 2:00 am on the "
        "following day (UTC)",
        _utc(
            "2027-01-01T20:00",
            "2027-01-01T20:30",
            "2027-01-01T21:00",
            "2027-01-01T21:30",
            "2027-01-01T22:00",
            "2027-01-01T22:30",
            "2027-01-01T23:00",
            "2027-01-01T23:30",
        ),
        ("2027-01-01T19:00", "2027-01-02T03:00"),
    ),
    Case(
        "wrapped hours: which mornings",
        "cron(0/30 20-2 ? * MON-FRI *)",
        "eb-cron",
        f"{SILENT} on which day's early hours belong to the range (and its meaning says 'to 2:00 am' where the "
        "fields give 02:30 too): the engine matches each tick's own date and fields, as every cron does, so Monday "
        "00:00-02:30 fires and Saturday's does not",
        _utc(
            "2027-01-04T00:00",
            "2027-01-04T00:30",
            "2027-01-04T01:00",
            "2027-01-04T01:30",
            "2027-01-04T02:00",
            "2027-01-04T02:30",
        ),
        ("2027-01-02T00:00", "2027-01-04T03:00"),
    ),
    Case(
        "example: 12:00 every day (put-rule)",
        "cron(0 12 * * ? *)",
        "eb-cron",
        "creates a rule that runs every day at 12:00pm UTC+0",
        _utc("2027-01-01T12:00", "2027-01-02T12:00"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
    ),
    Case(
        "example: 14:05 and 14:35",
        "cron(5,35 14 * * ? *)",
        "eb-cron",
        "creates a rule that runs every day, at 2:05pm and 2:35pm UTC+0",
        _utc("2027-01-01T14:05", "2027-01-01T14:35"),
        ("2027-01-01T00:00", "2027-01-02T00:00"),
    ),
    Case(
        "example: last Friday, 2019-2022",
        "cron(15 10 ? * 6L 2019-2022)",
        "eb-cron",
        "runs at 10:15am UTC+0 on the last Friday of each month during the years 2019 to 2022",
        _utc("2022-11-25T10:15", "2022-12-30T10:15"),
        ("2022-11-01T00:00", "2023-03-01T00:00"),
    ),
    Case(
        "example: nothing after its last year",
        "cron(15 10 ? * 6L 2019-2022)",
        "eb-cron",
        "during the years 2019 to 2022",
        (),
        after="2022-12-31T00:00",
    ),
    # ------------------------------------------------------------ every wildcard in every field
    Case(
        "minutes ,",
        "cron(0,30 12 * * ? *)",
        "eb-cron",
        _COMMA,
        _utc("2027-01-01T12:00", "2027-01-01T12:30"),
        ("2027-01-01T00:00", "2027-01-02T00:00"),
    ),
    Case(
        "minutes -",
        "cron(0-2 12 * * ? *)",
        "eb-cron",
        _DASH,
        _utc("2027-01-01T12:00", "2027-01-01T12:01", "2027-01-01T12:02"),
        ("2027-01-01T12:00", "2027-01-01T13:00"),
    ),
    Case(
        "minutes *",
        "cron(* 12 * * ? *)",
        "eb-cron",
        _STAR,
        _utc("2027-01-01T12:00", "2027-01-01T12:01", "2027-01-01T12:02"),
        ("2027-01-01T12:00", "2027-01-01T12:03"),
    ),
    Case(
        "minutes / (the reference's 1/10)",
        "cron(1/10 12 * * ? *)",
        "eb-cron",
        _SLASH,
        _utc(
            "2027-01-01T12:01",
            "2027-01-01T12:11",
            "2027-01-01T12:21",
            "2027-01-01T12:31",
            "2027-01-01T12:41",
            "2027-01-01T12:51",
        ),
        ("2027-01-01T12:00", "2027-01-01T13:00"),
    ),
    Case(
        "minutes: a range that wraps",
        "cron(55-5 0 1 1 ? 2027)",
        "eb-cron",
        f"{SILENT} on wrapping minutes; its example wraps hours (20-2), so the engine wraps every field but the year",
        _utc(*(f"2027-01-01T00:{m:02d}" for m in (0, 1, 2, 3, 4, 5, 55, 56, 57, 58, 59))),
        ("2027-01-01T00:00", "2027-01-01T01:00"),
    ),
    Case(
        "hours ,",
        "cron(0 1,13 * * ? *)",
        "eb-cron",
        _COMMA,
        _utc("2027-01-01T01:00", "2027-01-01T13:00"),
        ("2027-01-01T00:00", "2027-01-02T00:00"),
    ),
    Case(
        "hours -",
        "cron(0 9-11 * * ? *)",
        "eb-cron",
        _DASH,
        _utc("2027-01-01T09:00", "2027-01-01T10:00", "2027-01-01T11:00"),
        ("2027-01-01T00:00", "2027-01-02T00:00"),
    ),
    Case(
        "hours *",
        "cron(30 * * * ? *)",
        "eb-cron",
        _STAR,
        _utc("2027-01-01T00:30", "2027-01-01T01:30", "2027-01-01T02:30"),
        ("2027-01-01T00:00", "2027-01-01T03:00"),
    ),
    Case(
        "hours /",
        "cron(0 0/6 * * ? *)",
        "eb-cron",
        _SLASH,
        _utc("2027-01-01T00:00", "2027-01-01T06:00", "2027-01-01T12:00", "2027-01-01T18:00"),
        ("2027-01-01T00:00", "2027-01-02T00:00"),
    ),
    Case(
        "day-of-month ,",
        "cron(0 0 1,15 * ? *)",
        "eb-cron",
        _COMMA,
        _utc("2027-01-01T00:00", "2027-01-15T00:00"),
        ("2027-01-01T00:00", "2027-02-01T00:00"),
    ),
    Case(
        "day-of-month - (the reference's 1-15)",
        "cron(0 0 1-15 * ? *)",
        "eb-cron",
        _DASH,
        _utc("2027-01-14T00:00", "2027-01-15T00:00"),
        ("2027-01-14T00:00", "2027-01-18T00:00"),
    ),
    Case(
        "day-of-month / across month ends",
        "cron(0 0 1/10 * ? *)",
        "eb-cron",
        _SLASH,
        _utc(
            "2027-01-01T00:00",
            "2027-01-11T00:00",
            "2027-01-21T00:00",
            "2027-01-31T00:00",
            "2027-02-01T00:00",
            "2027-02-11T00:00",
            "2027-02-21T00:00",
        ),
        ("2027-01-01T00:00", "2027-03-01T00:00"),
    ),
    Case(
        "day-of-month with ? in day-of-week (the reference's 7)",
        "cron(0 12 7 * ? *)",
        "eb-cron",
        _QUESTION,
        _utc("2027-01-07T12:00", "2027-02-07T12:00"),
        ("2027-01-01T00:00", "2027-03-01T00:00"),
    ),
    Case(
        "day-of-month L: month ends",
        "cron(0 12 L * ? *)",
        "eb-cron",
        _L,
        _utc("2027-01-31T12:00", "2027-02-28T12:00", "2027-03-31T12:00", "2027-04-30T12:00"),
        ("2027-01-01T00:00", "2027-05-01T00:00"),
    ),
    Case(
        "day-of-month L: a leap February",
        "cron(0 12 L * ? *)",
        "eb-cron",
        _L,
        _utc(
            "2028-02-29T12:00",
        ),
        ("2028-02-01T00:00", "2028-03-01T00:00"),
    ),
    Case(
        "day-of-month W (the reference's 3W)",
        "cron(0 12 3W * ? *)",
        "eb-cron",
        _W,
        _utc("2027-01-04T12:00", "2027-02-03T12:00", "2027-03-03T12:00", "2027-04-02T12:00"),
        ("2027-01-01T00:00", "2027-05-01T00:00"),
    ),
    Case(
        "1W when the 1st is a Saturday",
        "cron(0 12 1W * ? *)",
        "eb-cron",
        f"{SILENT} on month edges: the engine stays in the month, as Quartz (whose syntax this is) does: "
        "Monday the 3rd",
        _utc(
            "2028-01-03T12:00",
        ),
        ("2028-01-01T00:00", "2028-02-01T00:00"),
    ),
    Case(
        "31W when the 31st is a Sunday",
        "cron(0 12 31W * ? *)",
        "eb-cron",
        f"{SILENT} on month edges: the engine stays in the month: Friday the 29th",
        _utc(
            "2028-12-29T12:00",
        ),
        ("2028-12-01T00:00", "2029-01-01T00:00"),
    ),
    Case(
        "30W in February",
        "cron(0 12 30W 2 ? *)",
        "eb-cron",
        f"{SILENT}: a month without day n has no tick, as for a plain 30",
        (),
        ("2028-02-01T00:00", "2028-03-01T00:00"),
    ),
    Case(
        "day 31 in short months",
        "cron(0 0 31 * ? *)",
        "eb-cron",
        f"{SILENT} on days a month lacks: no tick that month (Scheduler does not move it to the last day)",
        _utc("2027-01-31T00:00", "2027-03-31T00:00", "2027-05-31T00:00"),
        ("2027-01-01T00:00", "2027-07-01T00:00"),
    ),
    Case(
        "29 February: leap years only",
        "cron(0 0 29 2 ? *)",
        "eb-cron",
        "Day-of-month: 1-31 (the field table)",
        _utc("2028-02-29T00:00", "2032-02-29T00:00", "2036-02-29T00:00"),
        after="2027-03-01T00:00",
    ),
    Case(
        "29 February across 2100 (not a leap year)",
        "cron(0 0 29 2 ? 2096-2104)",
        "eb-cron",
        _DASH,
        _utc("2096-02-29T00:00", "2104-02-29T00:00"),
        after="2096-01-01T00:00",
    ),
    Case(
        "month , (the reference's JAN,FEB,MAR)",
        "cron(0 0 1 JAN,FEB,MAR ? *)",
        "eb-cron",
        _COMMA,
        _utc("2027-01-01T00:00", "2027-02-01T00:00", "2027-03-01T00:00"),
        ("2027-01-01T00:00", "2028-01-01T00:00"),
    ),
    Case(
        "month -",
        "cron(0 0 1 6-8 ? *)",
        "eb-cron",
        _DASH,
        _utc("2027-06-01T00:00", "2027-07-01T00:00", "2027-08-01T00:00"),
        ("2027-01-01T00:00", "2028-01-01T00:00"),
    ),
    Case(
        "month /",
        "cron(0 0 1 1/4 ? *)",
        "eb-cron",
        _SLASH,
        _utc("2027-01-01T00:00", "2027-05-01T00:00", "2027-09-01T00:00"),
        ("2027-01-01T00:00", "2028-01-01T00:00"),
    ),
    Case(
        "day-of-week ,",
        "cron(0 12 ? * MON,WED,FRI *)",
        "eb-cron",
        _COMMA,
        _utc("2027-01-04T12:00", "2027-01-06T12:00", "2027-01-08T12:00"),
        ("2027-01-04T00:00", "2027-01-11T00:00"),
    ),
    Case(
        "day-of-week *",
        "cron(0 12 ? * * *)",
        "eb-cron",
        _STAR,
        _utc("2027-01-01T12:00", "2027-01-02T12:00"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
    ),
    Case(
        "day-of-week numbers: 1 is Sunday",
        "cron(0 12 ? * 1 *)",
        "eb-cron",
        "Day-of-week: 1-7 or SUN-SAT",
        _utc("2027-01-03T12:00", "2027-01-10T12:00"),
        ("2027-01-01T00:00", "2027-01-11T00:00"),
    ),
    Case(
        "day-of-week: a range that wraps",
        "cron(0 12 ? * FRI-MON *)",
        "eb-cron",
        f"{SILENT} on wrapping days; the engine wraps as for hours (20-2): Friday to Monday",
        _utc("2027-01-01T12:00", "2027-01-02T12:00", "2027-01-03T12:00", "2027-01-04T12:00"),
        ("2027-01-01T00:00", "2027-01-06T00:00"),
    ),
    Case(
        "day-of-week L alone: Saturday",
        "cron(0 12 ? * L *)",
        "eb-cron",
        _L,
        _utc("2027-01-02T12:00", "2027-01-09T12:00", "2027-01-16T12:00"),
        ("2027-01-01T00:00", "2027-01-17T00:00"),
    ),
    Case(
        "day-of-week # (the reference's 3#2)",
        "cron(0 12 ? * 3#2 *)",
        "eb-cron",
        _HASH,
        _utc("2027-01-12T12:00", "2027-02-09T12:00"),
        ("2027-01-01T00:00", "2027-03-01T00:00"),
    ),
    Case(
        "#5 absent in four-Friday months",
        "cron(0 12 ? * 6#5 *)",
        "eb-cron",
        f"{SILENT} on a month without a fifth such day: no tick that month",
        _utc("2027-01-29T12:00", "2027-04-30T12:00"),
        ("2027-01-01T00:00", "2027-05-01T00:00"),
    ),
    Case(
        "a fifth Sunday in February, decades apart",
        "cron(0 0 ? 2 1#5 *)",
        "eb-cron",
        f"{_HASH} (the next tick can be 28 or 40 years away; the engine walks the year field to 2199)",
        _utc(
            "2032-02-29T00:00",
            "2060-02-29T00:00",
            "2088-02-29T00:00",
            "2128-02-29T00:00",
            "2156-02-29T00:00",
            "2184-02-29T00:00",
        ),
        after="2027-01-01T00:00",
    ),
    Case(
        "year ,",
        "cron(0 0 1 1 ? 2027,2029)",
        "eb-cron",
        _COMMA,
        _utc("2027-01-01T00:00", "2029-01-01T00:00"),
        ("2027-01-01T00:00", "2031-01-01T00:00"),
    ),
    Case(
        "year -",
        "cron(0 0 1 1 ? 2027-2028)",
        "eb-cron",
        _DASH,
        _utc("2027-01-01T00:00", "2028-01-01T00:00"),
        ("2027-01-01T00:00", "2031-01-01T00:00"),
    ),
    Case(
        "year /",
        "cron(0 0 1 1 ? 2027/2)",
        "eb-cron",
        _SLASH,
        _utc("2027-01-01T00:00", "2029-01-01T00:00", "2031-01-01T00:00"),
        ("2027-01-01T00:00", "2032-01-01T00:00"),
    ),
    Case(
        "year 1970, the first",
        "cron(0 0 1 1 ? 1970)",
        "eb-cron",
        _TABLE,
        _utc(
            "1970-01-01T00:00",
        ),
        before="2027-01-01T00:00",
    ),
    Case(
        "year 2199, the last, 172 years away",
        "cron(0 0 1 1 ? 2199)",
        "eb-cron",
        _TABLE,
        _utc(
            "2199-01-01T00:00",
        ),
        after="2027-01-01T00:00",
    ),
    Case("year 2200", "cron(0 0 1 1 ? 2200)", "eb-cron", _TABLE, refused="outside 1970-2199"),
    Case("year 1969", "cron(0 0 1 1 ? 1969)", "eb-cron", _TABLE, refused="outside 1970-2199"),
    Case(
        "a year range backwards",
        "cron(0 0 1 1 ? 2028-2027)",
        "eb-cron",
        f"{SILENT}: years cannot wrap, so the engine refuses",
        refused="years do not wrap",
    ),
    # ------------------------------------------------------------ what the reference does not allow
    Case(
        "five fields",
        "cron(0 12 * * *)",
        "api-create",
        "A cron expression consists of six fields separated by white spaces: (minutes hours day_of_month month "
        'day_of_week year). (The cron reference: "Cron expressions have six required fields".)',
        refused="has five fields",
    ),
    Case("* in both day fields", "cron(0 12 * * * *)", "eb-cron", _DAY_FIELDS, refused="must be ? and the other not"),
    Case(
        "? in both day fields",
        "cron(0 12 ? * ? *)",
        "eb-cron",
        f"{SILENT} on two ?s; one field must name the days, so the engine refuses",
        refused="must be ? and the other not",
    ),
    Case(
        "two # expressions",
        "cron(0 12 ? * 3#1,6#3 *)",
        "eb-cron",
        f'{_ONE_HASH} For example, "3#1,6#3" is not valid',
        refused="one expression with #",
    ),
    Case(
        "/ in day-of-week",
        "cron(0 12 ? * 2/2 *)",
        "eb-cron",
        "Day-of-week wildcards: , - * ? L #",
        refused="no / in day-of-week",
    ),
    Case(
        "W in day-of-week",
        "cron(0 12 ? * 2W *)",
        "eb-cron",
        "Day-of-week wildcards: , - * ? L #",
        refused="W belongs to day-of-month",
    ),
    Case(
        "# in day-of-month",
        "cron(0 12 1#2 * ? *)",
        "eb-cron",
        "Day-of-month wildcards: , - * ? / L W",
        refused="is not a value",
    ),
    Case("L in minutes", "cron(L 12 * * ? *)", "eb-cron", "Minutes wildcards: , - * /", refused="is not a number"),
    Case(
        "L-2 in day-of-month",
        "cron(0 12 L-2 * ? *)",
        "eb-cron",
        f"{_L} (no offset from L is documented; the engine refuses)",
        refused="not in the cron reference",
    ),
    Case(
        "L-3 in day-of-week",
        "cron(0 12 ? * L-3 *)",
        "eb-cron",
        f"{_L} (no offset from L is documented; the engine refuses)",
        refused="not in the cron reference",
    ),
    Case(
        "LW",
        "cron(0 12 LW * ? *)",
        "eb-cron",
        f"{SILENT} on L and W together: the table lists them separately, so the engine refuses (clearly)",
        refused="not in the cron reference",
    ),
    Case("minute 60", "cron(60 12 * * ? *)", "eb-cron", _TABLE, refused="outside 0-59"),
    Case("day-of-week 0", "cron(0 12 ? * 0 *)", "eb-cron", _TABLE, refused="outside 1-7"),
    Case("day-of-week 8", "cron(0 12 ? * 8 *)", "eb-cron", _TABLE, refused="outside 1-7"),
    Case("day-of-month 32", "cron(0 12 32 * ? *)", "eb-cron", "Day-of-month: 1-31", refused="outside 1-31"),
    Case("month 13", "cron(0 12 1 13 ? *)", "eb-cron", "Month: 1-12 or JAN-DEC", refused="outside 1-12"),
    # ------------------------------------------------------------ daylight saving time, several zones
    Case(
        "New York, clocks forward: 02:30 skipped",
        "cron(30 2 * * ? *)",
        "repost-dst",
        _SKIPPED,
        _utc("2027-03-13T07:30", "2027-03-15T06:30"),
        ("2027-03-13T00:00", "2027-03-16T00:00"),
        timezone="America/New_York",
    ),
    Case(
        "New York, clocks back: 01:30 once, the first",
        "cron(30 1 * * ? *)",
        "repost-dst",
        _REPEATED,
        _utc("2027-11-06T05:30", "2027-11-07T05:30", "2027-11-08T06:30"),
        ("2027-11-06T00:00", "2027-11-09T00:00"),
        timezone="America/New_York",
    ),
    Case(
        "New York, clocks back: the repeated hour's minutes once",
        "cron(0/20 1 * * ? *)",
        "repost-dst",
        _REPEATED,
        _utc("2027-11-07T05:00", "2027-11-07T05:20", "2027-11-07T05:40"),
        ("2027-11-07T04:00", "2027-11-07T08:00"),
        timezone="America/New_York",
    ),
    Case(
        "London, clocks forward: 01:30 skipped",
        "cron(30 1 * * ? *)",
        "repost-dst",
        _SKIPPED,
        _utc("2027-03-27T01:30", "2027-03-29T00:30"),
        ("2027-03-27T00:00", "2027-03-30T00:00"),
        timezone="Europe/London",
    ),
    Case(
        "London, clocks back: 01:30 once",
        "cron(30 1 * * ? *)",
        "repost-dst",
        _REPEATED,
        _utc("2027-10-30T00:30", "2027-10-31T00:30", "2027-11-01T01:30"),
        ("2027-10-30T00:00", "2027-11-02T00:00"),
        timezone="Europe/London",
    ),
    Case(
        "Adelaide (half-hour, south), forward in October",
        "cron(30 2 * * ? *)",
        "repost-dst",
        _SKIPPED,
        _utc("2027-10-01T17:00", "2027-10-03T16:00"),
        ("2027-10-01T00:00", "2027-10-04T00:00"),
        timezone="Australia/Adelaide",
    ),
    Case(
        "Adelaide (half-hour, south), back in April",
        "cron(30 2 * * ? *)",
        "repost-dst",
        _REPEATED,
        _utc("2027-04-02T16:00", "2027-04-03T16:00", "2027-04-04T17:00"),
        ("2027-04-02T00:00", "2027-04-05T00:00"),
        timezone="Australia/Adelaide",
    ),
    Case(
        "Lord Howe (a 30-minute shift), forward",
        "cron(15 2 * * ? *)",
        "repost-dst",
        _SKIPPED,
        _utc("2027-10-01T15:45", "2027-10-03T15:15"),
        ("2027-10-01T00:00", "2027-10-04T00:00"),
        timezone="Australia/Lord_Howe",
    ),
    Case(
        "Lord Howe (a 30-minute shift), back",
        "cron(45 1 * * ? *)",
        "repost-dst",
        _REPEATED,
        _utc("2027-04-02T14:45", "2027-04-03T14:45", "2027-04-04T15:15"),
        ("2027-04-02T00:00", "2027-04-05T00:00"),
        timezone="Australia/Lord_Howe",
    ),
    Case(
        "Auckland (south), forward in September",
        "cron(30 2 * * ? *)",
        "repost-dst",
        _SKIPPED,
        _utc("2027-09-24T14:30", "2027-09-26T13:30"),
        ("2027-09-24T00:00", "2027-09-27T00:00"),
        timezone="Pacific/Auckland",
    ),
    Case(
        "Kolkata (+5:30, no DST)",
        "cron(0 9 * * ? *)",
        "sched-types",
        "You configure each recurring schedule type using a schedule expression ... and specifying a time zone in "
        "which EventBridge Scheduler evaluates the expression.",
        _utc("2027-01-01T03:30", "2027-01-02T03:30"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
        timezone="Asia/Kolkata",
    ),
    Case(
        "rate(1 days) across clocks forward: 24 hours",
        "rate(1 days)",
        "repost-dst",
        _RATE_DAY,
        _utc("2027-03-13T07:00", "2027-03-14T07:00", "2027-03-15T07:00"),
        ("2027-03-13T00:00", "2027-03-16T00:00"),
        timezone="America/New_York",
        start_date="2027-03-13T07:00:00Z",
    ),
    # ------------------------------------------------------------ at()
    Case(
        "at() in the skipped hour",
        "at(2027-03-14T02:30:00)",
        "sched-types",
        f"{SILENT} on a one-time schedule at a local time that does not exist: the engine refuses it",
        refused="does not exist",
        timezone="America/New_York",
    ),
    Case(
        "at() in the repeated hour: the first",
        "at(2027-11-07T01:30:00)",
        "sched-types",
        f'{SILENT} for at(); the engine fires it at the first occurrence, as the guide says of cron ("before the '
        'shift occurs")',
        _utc(
            "2027-11-07T05:30",
        ),
        ("2027-11-07T00:00", "2027-11-08T00:00"),
        timezone="America/New_York",
    ),
    Case(
        "at() ignores StartDate",
        "at(2027-06-01T12:00:00)",
        "api-create",
        _ONE_TIME,
        _utc(
            "2027-06-01T12:00",
        ),
        ("2027-05-01T00:00", "2027-08-01T00:00"),
        start_date="2027-07-01T00:00:00Z",
    ),
    Case(
        "at() ignores EndDate",
        "at(2027-06-01T12:00:00)",
        "api-create",
        _ONE_TIME,
        _utc(
            "2027-06-01T12:00",
        ),
        ("2027-05-01T00:00", "2027-08-01T00:00"),
        end_date="2027-05-15T00:00:00Z",
    ),
    Case("at() with seconds", "at(2027-01-01T00:00:30)", "api-create", _MINUTE_ONLY, refused="whole minutes"),
    # ------------------------------------------------------------ rate() and its anchor
    Case(
        "example: rate(1 minute)",
        "rate(1 minute)",
        "eb-rate",
        "The first example triggers the rule minute",
        _utc("2027-01-01T00:00", "2027-01-01T00:01", "2027-01-01T00:02"),
        ("2027-01-01T00:00", "2027-01-01T00:03"),
        start_date="2027-01-01T00:00:00Z",
    ),
    Case(
        "example: rate(5 minutes) from its creation",
        "rate(5 minutes)",
        "sched-types",
        f"{_NO_START} (The documented scheduled-time of such a schedule is 2022-03-22T18:59:43Z, seconds and all.)",
        _utc("2022-03-22T18:59:43", "2022-03-22T19:04:43", "2022-03-22T19:09:43"),
        ("2022-03-22T18:59:00", "2022-03-22T19:10:00"),
        created="2022-03-22T18:59:43Z",
    ),
    Case(
        "rate(1 hour)",
        "rate(1 hour)",
        "eb-rate",
        "the third example triggers it once an hour",
        _utc("2027-01-01T00:00", "2027-01-01T01:00"),
        ("2027-01-01T00:00", "2027-01-01T02:00"),
        start_date="2027-01-01T00:00:00Z",
    ),
    Case(
        "rate(1 day)",
        "rate(1 day)",
        "eb-rate",
        "the final example triggers it once per day",
        _utc("2027-01-01T00:00", "2027-01-02T00:00"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
        start_date="2027-01-01T00:00:00Z",
    ),
    Case(
        "rate(5 minute): Scheduler's units",
        "rate(5 minute)",
        "api-create",
        f"{_UNITS} (EventBridge rules demand the plural for values over 1; Scheduler's API states no such rule, so "
        "the engine accepts it)",
        _utc("2027-01-01T00:00", "2027-01-01T00:05", "2027-01-01T00:10"),
        ("2027-01-01T00:00", "2027-01-01T00:11"),
        start_date="2027-01-01T00:00:00Z",
    ),
    Case("rate(0 minutes)", "rate(0 minutes)", "api-create", _UNITS, refused="positive integer"),
    Case("rate(1 week)", "rate(1 week)", "api-create", _UNITS, refused="expected rate(N"),
    Case(
        "rate() anchored on StartDate",
        "rate(2 hours)",
        "api-create",
        _START,
        _utc("2027-01-01T01:00", "2027-01-01T03:00", "2027-01-01T05:00"),
        ("2027-01-01T00:00", "2027-01-01T06:00"),
        start_date="2027-01-01T01:00:00Z",
    ),
    Case(
        "rate() StartDate with seconds",
        "rate(1 hour)",
        "api-create",
        _MINUTE_ONLY,
        refused="whole minutes",
        start_date="2027-01-01T00:00:30Z",
    ),
    # ------------------------------------------------------------ StartDate / EndDate
    Case(
        "cron between StartDate and EndDate",
        "cron(0 * * * ? *)",
        "api-create",
        f"{_START} {_END}",
        _utc("2027-01-01T01:00", "2027-01-01T02:00"),
        ("2027-01-01T00:00", "2027-01-01T05:00"),
        start_date="2027-01-01T01:00:00Z",
        end_date="2027-01-01T03:00:00Z",
    ),
    Case(
        "StartDate between two cron ticks",
        "cron(0 * * * ? *)",
        "api-create",
        _START,
        _utc("2027-01-01T02:00", "2027-01-01T03:00"),
        ("2027-01-01T00:00", "2027-01-01T04:00"),
        start_date="2027-01-01T01:30:00Z",
    ),
    Case(
        "a tick at EndDate",
        "rate(1 hour)",
        "api-create",
        f"{_END} Depending on the schedule's recurrence expression, invocations might stop on, or before, the "
        "EndDate: the engine takes 'before' (a tick at EndDate does not fire)",
        _utc("2027-01-01T00:00", "2027-01-01T01:00"),
        ("2027-01-01T00:00", "2027-01-01T05:00"),
        start_date="2027-01-01T00:00:00Z",
        end_date="2027-01-01T02:00:00Z",
    ),
    Case(
        "EndDate before StartDate",
        "cron(0 * * * ? *)",
        "api-create",
        f"{SILENT} in the API model; the engine refuses a schedule that can never fire",
        refused="not after StartDate",
        start_date="2027-01-02T00:00:00Z",
        end_date="2027-01-01T00:00:00Z",
    ),
)
