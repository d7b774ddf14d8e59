"""Rule rate-anchored, proven by planted violations."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"
CLEANUP = "  SessionCleanupFunction:\n"
HOURLY = "SessionCleanupFunction.Events.Schedule"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("rate-anchored") == []


def test_a_rate_schedule_without_a_start_date_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "ScheduleExpression: cron(0 * * * ? *)", "ScheduleExpression: rate(1 hour)", after=CLEANUP
    )

    violations = planted.violations("rate-anchored")

    found(violations, file=TEMPLATE, resource=HOURLY, containing="rate(1 hour) has no StartDate")


def test_a_rate_schedule_anchored_off_the_minute_is_caught_and_a_whole_minute_is_not(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "ScheduleExpression: cron(0 * * * ? *)",
        'ScheduleExpression: rate(1 hour)\n            StartDate: "2027-01-01T00:00:30Z"',
        after=CLEANUP,
    )

    found(planted.violations("rate-anchored"), file=TEMPLATE, resource=HOURLY, containing="whole minutes")

    planted.replace(TEMPLATE, "2027-01-01T00:00:30Z", "2027-01-01T00:00:00Z")

    assert planted.violations("rate-anchored") == []
