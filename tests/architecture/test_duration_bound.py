"""Rule duration-bound, proven by planted violations."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("duration-bound") == []


def test_planted_expected_duration_at_the_timeout_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "expected_duration_seconds: 60", "expected_duration_seconds: 120", resource="WindowGenerationFunction"
    )

    violation = found(
        planted.violations("duration-bound"),
        file=TEMPLATE,
        resource="WindowGenerationFunction",
        containing="not below the Timeout",
    )

    assert "120" in violation.message


def test_planted_duration_alarm_above_the_bound_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, '      Threshold: "30000"', "      Threshold: 110000", resource="SessionCleanupDurationAlarm"
    )

    violation = found(planted.violations("duration-bound"), file=TEMPLATE, resource="SessionCleanupFunction")

    assert "p99 > 110000" in violation.message


def test_planted_duration_alarm_on_the_average_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      ExtendedStatistic: p99\n",
        "      Statistic: Average\n",
        after="  WindowGenerationDurationAlarm:",
    )

    found(planted.violations("duration-bound"), file=TEMPLATE, resource="WindowGenerationFunction", containing="p90")


def test_planted_function_without_an_expected_duration_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "        expected_duration_seconds: 30\n", "", resource="SessionCleanupFunction")

    found(
        planted.violations("duration-bound"),
        file=TEMPLATE,
        resource="SessionCleanupFunction",
        containing="expected_duration_seconds is not declared",
    )


def test_planted_worker_expected_to_run_to_its_timeout_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "expected_duration_seconds: 285",
        "expected_duration_seconds: 300",
        after="  SessionCleanupWorkerFunction:",
    )

    found(
        planted.violations("duration-bound"),
        file=TEMPLATE,
        resource="SessionCleanupWorkerFunction",
        containing="not below the Timeout 300 s",
    )


def test_planted_worker_without_a_duration_alarm_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "Value: !Ref WindowGenerationWorkerFunction\n      ExtendedStatistic: p99",
        "Value: !Ref WindowGenerationFunction\n      ExtendedStatistic: p99",
        resource="WindowGenerationWorkerDurationAlarm",
    )

    violation = found(
        planted.violations("duration-bound"), file=TEMPLATE, resource="WindowGenerationWorkerFunction", containing="p90"
    )
    assert "found: none" in violation.message
