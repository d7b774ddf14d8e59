"""AWS's sentences the conformance cases rest on, quoted once (each case names its page)."""

from __future__ import annotations

COMMA = (
    "The , (comma) wildcard includes additional values. In the Month field, JAN,FEB,MAR includes January, February, "
    "and March."
)
DASH = (
    "The - (dash) wildcard specifies ranges. In the Day field, 1-15 includes days 1 through 15 of the specified month."
)
STAR = "The * (asterisk) wildcard includes all values in the field. In the Hours field, * includes every hour."
SLASH = (
    "The / (slash) wildcard specifies increments. In the Minutes field, you could enter 1/10 to specify every tenth "
    "minute, starting from the first minute of the hour (for example, the 11th, 21st, and 31st minute, and so on)."
)
QUESTION = (
    "The ? (question mark) wildcard specifies any. In the Day-of-month field you could enter 7 and if any day of the "
    "week was acceptable, you could enter ? in the Day-of-week field."
)
L = "The L wildcard in the Day-of-month or Day-of-week fields specifies the last day of the month or week."
W = "In the Day-of-month field, 3W specifies the weekday closest to the third day of the month."
HASH = "For example, 3#2 would be the second Tuesday of the month"
ONE_HASH = "If you use a '#' character, you can define only one expression in the day-of-week field."
DAY_FIELDS = (
    "If you specify a value or a * (asterisk) in one of the fields, you must use a ? (question mark) in the other."
)
TABLE = "Year: 1970-2199; Day-of-week: 1-7 or SUN-SAT; Minutes: 0-59 (the cron reference's field table)"
SKIPPED = "your schedule invocation gets skipped if the cron expression falls on a non-existent date and time."
REPEATED = (
    "When the time shifts back in the Fall, your schedule runs only once and doesn't repeat its invocation. (The "
    'Scheduler guide\'s example: it runs "once at 2:30 a.m. before the shift occurs".)'
)
RATE_DAY = (
    "days represents a 24-hour duration on the clock. When Daylight Saving Time shortens a day to 23 hours, or extends "
    "it to 25 hours, the EventBridge Scheduler evaluates the rate expression 24 hours after the schedule's last "
    "invocation."
)
START = (
    "StartDate: The date, in UTC, after which the schedule can begin invoking its target. Depending on the schedule's "
    "recurrence expression, invocations might occur on, or after, the StartDate you specify."
)
END = "EndDate: The date, in UTC, before which the schedule can invoke its target."
ONE_TIME = "EventBridge Scheduler ignores StartDate for one-time schedules. (EndDate likewise.)"
NO_START = (
    "If you do not provide a StartDate for a rate-based schedule, your schedule starts invoking the target immediately."
)
UNITS = (
    "A rate expression consists of a value as a positive integer, and a unit with the following options: minute | "
    "minutes | hour | hours | day | days"
)
# The Scheduler user guide's own sentences ("Schedule types"), where they part from the API model.
GUIDE_FIELDS = (
    "A cron expression consists of five required fields separated by white space: minutes, hours, day-of-month, "
    "month, day-of-week, and one optional field, year, as shown in the following."
)
GUIDE_UNITS = (
    "Rate expressions have two required fields separated by a white space, as shown in the following. [...] value: "
    "A positive number. unit: The unit of time you want your schedule to invoke it's target. Valid inputs: minutes "
    "| hours | days"
)
API_FIELDS = (
    "A cron expression consists of six fields separated by white spaces: (minutes hours day_of_month month "
    "day_of_week year)."
)
RULES_PLURAL = (
    "If the value is equal to 1, then the unit must be singular. If the value is greater than 1, the unit must be "
    "plural."
)
MINUTE_ONLY = (
    "Not an AWS refusal: Scheduler accepts seconds; clockless ticks are whole minutes (docs/tick-contract.md), so "
    "the engine refuses"
)


def utc(*ticks: str) -> tuple[str, ...]:
    """Expected ticks, UTC, "YYYY-MM-DDTHH:MM" (":SS" appended when not :00)."""
    return ticks
