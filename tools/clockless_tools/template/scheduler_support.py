"""What clockless supports from EventBridge Scheduler, feature by feature: the table in docs/schedules.md.

`clockless schedules support` prints it; `make docs` writes it into docs/schedules.md and
`clockless docs --check` fails when the page and this list disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SUPPORTED: Final = "supported"
REFUSED: Final = "refused with a clear error"
NOT_APPLICABLE: Final = "not applicable"


@dataclass(frozen=True)
class Feature:
    name: str
    status: str
    how: str


FEATURES: Final = (
    Feature(
        "`cron()`: minutes, hours, day-of-month, month, day-of-week, year; `*` `,` `-` `/` `?` `L` `W` `#`",
        SUPPORTED,
        "the tick engine's own parser (`cron.py`), on the zone's wall-clock time; every case in "
        "docs/schedule-conformance.md",
    ),
    Feature(
        "`cron()` syntax the cron reference does not have: five fields, `L-n`, `LW`, `/` or `W` in day-of-week, "
        "two `#`, `?` or `*` in both day fields, values out of range (years outside 1970-2199)",
        REFUSED,
        "says why, quoting the reference, and the nearest valid expression",
    ),
    Feature(
        "`rate(N minute(s) / hour(s) / day(s))` with `StartDate: !Ref <anchor parameter>`",
        SUPPORTED,
        "ticks at anchor + k x period, in absolute time (a day is 24 h across DST); each deploy passes the next "
        "tick as StartDate (`clockless schedules start-dates`, `make deploy`); rule `rate-anchored`",
    ),
    Feature(
        "`rate()` with a literal `StartDate`",
        REFUSED,
        "`rate-anchored` fails: CreateSchedule refuses a StartDate more than 5 minutes in the past, so the "
        "first deploy after that date that re-creates the schedule would fail",
    ),
    Feature(
        "`rate()` without `StartDate`",
        REFUSED,
        "locally: its ticks depend on the creation time, so status/backfill refuse it and `rate-anchored` "
        "fails; with `--stack` the deployed schedule's CreationDate is read (GetSchedule), seconds and all",
    ),
    Feature("`rate(1 days)`, `rate(5 minute)`", SUPPORTED, "the API model pairs no unit with the value"),
    Feature("`rate(0 hours)`, `rate(1 week)`", REFUSED, "names the positive integer and the six units the API takes"),
    Feature(
        "`at(yyyy-mm-ddThh:mm:ss)` one-time schedule",
        SUPPORTED,
        "one tick at that wall-clock time in the zone; status, backfill, simulate, events, schedules show",
    ),
    Feature(
        "`at()` at a local time that does not exist (clocks go forward) or with seconds",
        REFUSED,
        "names the expression and the zone; clockless ticks are whole minutes",
    ),
    Feature(
        "`ScheduleExpressionTimezone: UTC`",
        SUPPORTED,
        "required of clockless jobs (rules `schedule-delivery`, `local-time`)",
    ),
    Feature(
        "`ScheduleExpressionTimezone`: another IANA zone",
        REFUSED,
        "`clockless arch` fails (a local cron skips or repeats ticks at DST); the engine still places the "
        "ticks in the zone (skipped hour: no tick; repeated hour: once, at the first) for `schedules check/show`",
    ),
    Feature("`StartDate`, `EndDate`", SUPPORTED, "recurring ticks fall in [StartDate, EndDate); `at()` ignores them"),
    Feature(
        "`GroupName`",
        SUPPORTED,
        "one `AWS::Scheduler::ScheduleGroup` per stack; `--stack` reads the group's name from the stack",
    ),
    Feature(
        "`FlexibleTimeWindow`",
        SUPPORTED,
        "must be stated (`schedule-delivery`); the window counts against the period and in the dead-man grace; "
        "the tick is the scheduled time",
    ),
    Feature(
        "`RetryPolicy`",
        SUPPORTED,
        "must be stated, event age shorter than the period (`schedule-delivery`), and covered by the "
        "idempotency expiry (`dedupe-outlives-retries`) and the dead-man grace",
    ),
    Feature("`DeadLetterConfig`", SUPPORTED, "required, on a queue watched by an alarm (`failure-paths`)"),
    Feature(
        "`Input` placeholders `scheduled-time`, `schedule-arn`, `attempt-number`, `execution-id`",
        SUPPORTED,
        "rendered by `clockless events`, the simulator and the local runtime",
    ),
    Feature("any other `<aws.scheduler.*>` placeholder", REFUSED, "names the placeholder"),
    Feature(
        "`State: DISABLED`", NOT_APPLICABLE, "not modelled: `status` reports a disabled schedule's ticks as missing"
    ),
    Feature("`Name` / `OmitName`", SUPPORTED, "`OmitName: true`; physical names are read from the stack"),
    Feature(
        "`ActionAfterCompletion`, `KmsKeyArn`, `RoleArn`, `PermissionsBoundary`",
        NOT_APPLICABLE,
        "no effect on when ticks happen",
    ),
    Feature(
        "targets other than a Lambda function (SQS, templated and universal targets)",
        NOT_APPLICABLE,
        "a clockless job is a function with a `ScheduleV2` event",
    ),
)


def render_table() -> str:
    lines = ["| EventBridge Scheduler feature | clockless | how |", "| --- | --- | --- |"]
    lines += [f"| {f.name} | {f.status} | {f.how} |" for f in FEATURES]
    return "\n".join(lines)
