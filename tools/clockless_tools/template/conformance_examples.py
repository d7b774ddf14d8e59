"""Conformance cases: the cron reference's own examples, and what it does not allow."""

from __future__ import annotations

from typing import Final

from clockless_tools.template.conformance import DISAGREE, SILENT, Case
from clockless_tools.template.conformance_quotes import API_FIELDS, DAY_FIELDS, GUIDE_FIELDS, ONE_HASH, TABLE, L, utc

CASES: Final[tuple[Case, ...]] = (
    # ------------------------------------------------------------ the cron reference's examples
    Case(
        "example: 10:00 every day",
        "cron(0 10 * * ? *)",
        "eb-cron",
        "Run at 10:00 am (UTC+0) every day",
        utc("2027-01-01T10:00", "2027-01-02T10:00"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
    ),
    Case(
        "example: 12:15 every day",
        "cron(15 12 * * ? *)",
        "eb-cron",
        "Run at 12:15 pm (UTC+0) every day",
        utc("2027-01-01T12:15", "2027-01-02T12:15"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
    ),
    Case(
        "example: weekdays 18:00",
        "cron(0 18 ? * MON-FRI *)",
        "eb-cron",
        "Run at 6:00 pm (UTC+0) every Monday through Friday",
        utc("2027-01-01T18:00", "2027-01-04T18:00"),
        ("2027-01-01T00:00", "2027-01-05T00:00"),
    ),
    Case(
        "example: 1st of the month",
        "cron(0 8 1 * ? *)",
        "eb-cron",
        "Run at 8:00 am (UTC+0) every 1st day of the month",
        utc("2027-01-01T08:00", "2027-02-01T08:00", "2027-03-01T08:00"),
        ("2027-01-01T00:00", "2027-03-02T00:00"),
    ),
    Case(
        "example: every 15 minutes",
        "cron(0/15 * * * ? *)",
        "eb-cron",
        "Run every 15 minutes",
        utc("2027-01-01T00:00", "2027-01-01T00:15", "2027-01-01T00:30", "2027-01-01T00:45"),
        ("2027-01-01T00:00", "2027-01-01T01:00"),
    ),
    Case(
        "example: every 10 minutes on weekdays",
        "cron(0/10 * ? * MON-FRI *)",
        "eb-cron",
        "Run every 10 minutes Monday through Friday",
        utc("2027-01-04T00:00", "2027-01-04T00:10", "2027-01-04T00:20"),
        ("2027-01-03T23:30", "2027-01-04T00:30"),
    ),
    Case(
        "example: every 5 minutes 8:00-17:55",
        "cron(0/5 8-17 ? * MON-FRI *)",
        "eb-cron",
        "Run every 5 minutes Monday through Friday between 8:00 am and 5:55 pm (UTC+0)",
        utc("2027-01-04T17:45", "2027-01-04T17:50", "2027-01-04T17:55"),
        ("2027-01-04T17:45", "2027-01-04T18:05"),
    ),
    Case(
        "example: hours that wrap past midnight (the evening)",
        "cron(0/30 20-2 ? * MON-FRI *)",
        "eb-cron",
        f"{DISAGREE} on the hour the evening starts. The example's words: 'Run every 30 minutes Monday through "
        "Friday between 10:00 pm on the starting day to 2:00 am on the following day (UTC) Run from 12:00 am to "
        "2:00 am on Monday morning (UTC).' Its hours field is 20, which is 8:00 pm, not 10:00 pm. The engine "
        "follows the field, as Scheduler parses it: the evening's ticks start at 20:00 (the next row is the "
        "mornings)",
        utc(
            "2027-01-01T20:00",
            "2027-01-01T20:30",
            "2027-01-01T21:00",
            "2027-01-01T21:30",
            "2027-01-01T22:00",
            "2027-01-01T22:30",
            "2027-01-01T23:00",
            "2027-01-01T23:30",
        ),
        ("2027-01-01T19:00", "2027-01-02T00:00"),
    ),
    Case(
        "wrapped hours: which mornings",
        "cron(0/30 20-2 ? * MON-FRI *)",
        "eb-cron",
        f"{DISAGREE}. The example's first sentence: 'between 10:00 pm on the starting day to 2:00 am on the "
        "following day', i.e. Friday night runs into Saturday 02:00 and Sunday night (not MON-FRI) does not run into "
        "Monday, and nothing after 02:00. Its second sentence, 'Run from 12:00 am to 2:00 am on Monday morning "
        "(UTC).', and the field table agree with each other: day-of-week 'MON-FRI' and hours '20-2' are matched "
        "against each tick's own date and hour, i.e. Monday 00:00-02:30 fires and Saturday's early hours do not. "
        "The engine follows the fields: they are what Scheduler parses (the same fields in any other example mean "
        "the tick's own day), and the words also disagree with the fields on 02:30",
        utc(
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
        utc("2027-01-01T12:00", "2027-01-02T12:00"),
        ("2027-01-01T00:00", "2027-01-03T00:00"),
    ),
    Case(
        "example: 14:05 and 14:35",
        "cron(5,35 14 * * ? *)",
        "eb-cron",
        "creates a rule that runs every day, at 2:05pm and 2:35pm UTC+0",
        utc("2027-01-01T14:05", "2027-01-01T14:35"),
        ("2027-01-01T00:00", "2027-01-02T00:00"),
    ),
    Case(
        "example: last Friday, 2019-2022",
        "cron(15 10 ? * 6L 2019-2022)",
        "eb-cron",
        "runs at 10:15am UTC+0 on the last Friday of each month during the years 2019 to 2022",
        utc("2022-11-25T10:15", "2022-12-30T10:15"),
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
    # ------------------------------------------------------------ what the reference does not allow
    Case(
        "five fields",
        "cron(0 12 * * *)",
        "sched-cron",
        f'{DISAGREE}. The Scheduler guide: "{GUIDE_FIELDS}" (its syntax line, cron(minutes hours '
        "day-of-month month day-of-week year), and each of its examples still write six). The API "
        f'model (CreateSchedule): "{API_FIELDS}"; the EventBridge cron reference: "Cron expressions '
        "have six required fields\". The engine follows the API model, the parameter's own contract, "
        "which the cron reference agrees with: it refuses five fields and says which year to add. "
        "Refusing costs a trailing * in template.yaml; accepting could pass a schedule that "
        "CreateSchedule refuses at deploy",
        refused="has five fields",
    ),
    Case("* in both day fields", "cron(0 12 * * * *)", "eb-cron", DAY_FIELDS, refused="must be ? and the other not"),
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
        f'{ONE_HASH} For example, "3#1,6#3" is not valid',
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
        f"{L} (no offset from L is documented; the engine refuses)",
        refused="not in the cron reference",
    ),
    Case(
        "L-3 in day-of-week",
        "cron(0 12 ? * L-3 *)",
        "eb-cron",
        f"{L} (no offset from L is documented; the engine refuses)",
        refused="not in the cron reference",
    ),
    Case(
        "LW",
        "cron(0 12 LW * ? *)",
        "eb-cron",
        f"{SILENT} on L and W together (the wildcard text defines L and nW, never LW, the last weekday): the "
        "engine refuses it, and suggests what the reference does define: L (the last day, weekends too) or 6L in "
        "day-of-week (the last Friday)",
        refused="not in the cron reference",
    ),
    Case(
        "a date no month has",
        "cron(0 0 31 2 ? *)",
        "eb-cron",
        f"{SILENT} on a cron whose fields match no date (each field is in range): it would never fire, so the "
        "engine refuses it",
        refused="never fires",
    ),
    Case(
        "a leap day in a year without one",
        "cron(0 0 29 2 ? 2027)",
        "eb-cron",
        f"{SILENT} on a cron whose fields match no date (each field is in range): it would never fire, so the "
        "engine refuses it",
        refused="never fires",
    ),
    Case("minute 60", "cron(60 12 * * ? *)", "eb-cron", TABLE, refused="outside 0-59"),
    Case("day-of-week 0", "cron(0 12 ? * 0 *)", "eb-cron", TABLE, refused="outside 1-7"),
    Case("day-of-week 8", "cron(0 12 ? * 8 *)", "eb-cron", TABLE, refused="outside 1-7"),
    Case("day-of-month 32", "cron(0 12 32 * ? *)", "eb-cron", "Day-of-month: 1-31", refused="outside 1-31"),
    Case("month 13", "cron(0 12 1 13 ? *)", "eb-cron", "Month: 1-12 or JAN-DEC", refused="outside 1-12"),
)
