"""Rule failure-paths, proven by planted violations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
NIGHTLY = f"  {DAILY_JOB.stem}Function:"
HOURLY = f"  {HOURLY_JOB.stem}Function:"
CFN_LINT = str(Path(sys.executable).parent / "cfn-lint")


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations("failure-paths") == []


def test_planted_function_without_event_invoke_config_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "      EventInvokeConfig:\n", "      XEventInvokeConfig:\n", after=HOURLY)

    violation = found(planted.violations("failure-paths"), file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function")

    assert "no EventInvokeConfig" in violation.message


def test_planted_unbounded_retries_and_event_age_are_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "MaximumRetryAttempts: 2\n        MaximumEventAgeInSeconds: 3600", "", after=NIGHTLY)

    violations = planted.violations("failure-paths")

    found(violations, file=TEMPLATE, resource=f"{DAILY_JOB.stem}Function", containing="MaximumRetryAttempts is None")
    found(violations, file=TEMPLATE, resource=f"{DAILY_JOB.stem}Function", containing="MaximumEventAgeInSeconds is")


def test_planted_on_failure_destination_that_is_not_a_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "            Type: SQS\n", "            Type: SNS\n", after=HOURLY)

    violation = found(planted.violations("failure-paths"), file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function")

    assert "no OnFailure destination on a queue" in violation.message


def test_planted_unwatched_failure_queue_is_caught_for_every_function(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "Value: !GetAtt JobFailureQueue.QueueName",
        "Value: !GetAtt JobFailureQueue.Arn",
        resource="JobFailureAlarm",
    )

    violations = planted.violations("failure-paths")

    for function in (f"{DAILY_JOB.stem}Function", f"{HOURLY_JOB.stem}Function"):
        found(violations, file=TEMPLATE, resource=function, containing="OnFailure queue JobFailureQueue is watched")


def test_planted_unwatched_schedule_dead_letter_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      MetricName: ApproximateNumberOfMessagesVisible",
        "      MetricName: NumberOfMessagesSent",
        after="  SchedulerDeadLetterAlarm:",
    )

    violations = planted.violations("failure-paths")

    found(violations, file=TEMPLATE, resource=f"{DAILY_JOB.stem}Function.Events.Schedule", containing="watched by no")
    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function.Events.Schedule", containing="watched by no")


def test_planted_schedule_without_a_dead_letter_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "            DeadLetterConfig:\n", "            XDeadLetterConfig:\n", after=NIGHTLY)

    violation = found(
        planted.violations("failure-paths"), file=TEMPLATE, resource=f"{DAILY_JOB.stem}Function.Events.Schedule"
    )

    assert "names no queue" in violation.message


def test_planted_function_without_an_errors_alarm_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "      MetricName: Errors", "      MetricName: Throttles", after=f"  {HOURLY_JOB.stem}ErrorsAlarm:"
    )

    violation = found(planted.violations("failure-paths"), file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function")

    assert "Errors" in violation.message


def test_cfn_lint_serverless_does_not_see_a_scheduled_function_without_a_failure_destination(
    planted: PlantedCopy,
) -> None:
    """Why failure-paths exists: the serverless rules' async check does not cover ScheduleV2."""
    planted.replace(
        TEMPLATE,
        "      EventInvokeConfig:\n        MaximumRetryAttempts: 2\n        MaximumEventAgeInSeconds: 1800\n"
        "        DestinationConfig:\n          OnFailure:\n            Type: SQS\n"
        "            Destination: !GetAtt JobFailureQueue.Arn\n",
        "",
        after=HOURLY,
    )
    lint = subprocess.run(
        [
            CFN_LINT,
            "--append-rules",
            "cfn_lint_serverless.rules",
            "--",
            str(planted.root / TEMPLATE),
        ],
        capture_output=True,
        text=True,
        check=False,
    )

    assert (lint.returncode, lint.stdout) == (0, ""), lint.stdout + lint.stderr
    found(
        planted.violations("failure-paths"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}Function",
        containing="no EventInvokeConfig",
    )


def test_planted_queue_alarm_that_waits_for_a_backlog_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "      Threshold: 0\n", "      Threshold: 50\n", after="  JobFailureAlarm:")

    violations = planted.violations("failure-paths")

    found(
        violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="JobFailureQueue is watched by no"
    )


def test_planted_worker_without_an_errors_alarm_is_caught(planted: PlantedCopy) -> None:
    # A worker's failed runs only reappear as messages after the visibility timeout: its Errors say it first.
    planted.replace(
        TEMPLATE,
        "      MetricName: Errors",
        "      MetricName: Throttles",
        after=f"  {DAILY_JOB.stem}WorkerErrorsAlarm:",
    )

    violation = found(planted.violations("failure-paths"), file=TEMPLATE, resource=f"{DAILY_JOB.stem}WorkerFunction")

    assert "Errors" in violation.message
