"""The tick engine's conformance table: expressions with the ticks AWS's documents say they have.

Every case names the AWS page and quotes the sentence it rests on; where AWS is silent the case
says so and states what the engine assumes. tests/unit/test_schedule_conformance.py runs every
case against the engine; `clockless schedules conformance` renders the table into
docs/schedule-conformance.md. The expected ticks were worked out by hand from the calendar and
the zone rules, never by running the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from clockless.schedule.expressions import ScheduleExpressionError, ScheduleSpec

SOURCES: Final = {
    "eb-cron": (
        "EventBridge User Guide, Cron expressions reference",
        "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cron-expressions.html",
    ),
    "eb-rate": (
        "EventBridge User Guide, Rate expressions",
        "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html#eb-rate-expressions",
    ),
    "sched-types": (
        "EventBridge Scheduler User Guide, Schedule types",
        "https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html",
    ),
    "sched-cron": (
        "EventBridge Scheduler User Guide, Schedule types: Cron-based schedules",
        "https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#cron-based",
    ),
    "sched-rate": (
        "EventBridge Scheduler User Guide, Schedule types: Rate-based schedules",
        "https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#rate-based",
    ),
    "api-create": (
        "EventBridge Scheduler API Reference, CreateSchedule (and botocore's scheduler service model)",
        "https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html",
    ),
    "repost-dst": (
        "AWS re:Post Knowledge Center, How can I adjust my Amazon EventBridge schedule for daylight saving?",
        "https://repost.aws/knowledge-center/eventbridge-scheduler-adjust-dst",
    ),
}
SILENT: Final = "AWS is silent"
# A row where two of AWS's sentences say different things: it quotes both and says which the engine follows.
DISAGREE: Final = "AWS's pages disagree"


@dataclass(frozen=True)
class Case:
    """One row: an expression (with zone, bounds, creation) and the ticks it must have in `window`,
    or the ticks right after `after`, or the refusal it must meet (`refused`, a fragment of the message)."""

    name: str
    expression: str
    source: str
    says: str  # the sentence quoted from `source`, or SILENT + ": " + what the engine assumes
    ticks: tuple[str, ...] = ()  # UTC, "YYYY-MM-DDTHH:MM" (":SS" appended when not :00)
    window: tuple[str, str] | None = None  # [from, to) in UTC
    after: str | None = None  # instead of a window: the ticks strictly after this instant
    before: str | None = None  # instead of a window: the one tick at or before this instant
    timezone: str = "UTC"
    start_date: str | None = None
    end_date: str | None = None
    created: str | None = None
    refused: str | None = None

    @property
    def silent(self) -> bool:
        return self.says.startswith(SILENT)

    def spec(self) -> ScheduleSpec:
        return ScheduleSpec.of(
            self.expression,
            timezone=self.timezone,
            start_date=self.start_date,
            end_date=self.end_date,
            created=None if self.created is None else _instant(self.created),
        )

    def engine_ticks(self) -> tuple[str, ...]:
        """What the engine computes for this case (raises ScheduleExpressionError when it refuses)."""
        spec = self.spec()
        if self.after is not None:
            found = spec.next_ticks(_instant(self.after), max(len(self.ticks), 1))
        elif self.before is not None:
            previous = spec.previous_tick(_instant(self.before))
            found = [] if previous is None else [previous]
        else:
            assert self.window is not None, self.name
            found = spec.ticks_between(_instant(self.window[0]), _instant(self.window[1]))
        return tuple(format_tick(tick) for tick in found)

    def verdict(self) -> str:
        """'ok' when the engine gives exactly the expected ticks (or refusal); else what it gave."""
        try:
            got = self.engine_ticks()
        except ScheduleExpressionError as error:
            if self.refused is not None and self.refused in str(error):
                return "ok"
            return f"refused: {error}"
        if self.refused is not None:
            return f"accepted, ticks {', '.join(got) or 'none'}"
        return "ok" if got == self.ticks else f"got {', '.join(got) or 'no ticks'}"


def format_tick(tick: datetime) -> str:
    text = tick.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")
    return text + (f":{tick.second:02d}" if tick.second else "")


def _instant(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def markdown(cases: tuple[Case, ...]) -> str:
    """The table docs/schedule-conformance.md shows, with the engine's verdict on each row."""
    lines = [
        "| # | expression | zone, bounds | expected (UTC) | AWS's words | source | engine |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for number, case in enumerate(cases, 1):
        setting = [case.timezone]
        for label, value in (
            ("StartDate", case.start_date),
            ("EndDate", case.end_date),
            ("created", case.created),
        ):
            if value is not None:
                setting.append(f"{label} {value}")
        if case.refused is not None:
            expected = f"refused: {case.refused}"
        else:
            if case.after is not None:
                where = f"next after {case.after}"
            elif case.before is not None:
                where = f"last at or before {case.before}"
            else:
                assert case.window is not None
                where = f"in [{case.window[0]}, {case.window[1]})"
            expected = f"{where}: {', '.join(case.ticks) or 'none'}"
        title, url = SOURCES[case.source]
        cells = [
            f"{number} {case.name}",
            f"`{case.expression}`",
            "; ".join(setting),
            expected,
            case.says,
            f"[{title}]({url})",
            case.verdict(),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
