"""Rule `event-samples`: planted drift between the samples, the env-vars file and the template, each caught."""

from __future__ import annotations

import json

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


ENV_VARS = "events/env.local.json"


CLEANUP_EVENTS = f"events/{HOURLY_JOB.package}"


def _edit_env_vars(copy: PlantedCopy, function: str, **changes: str | None) -> None:
    path = copy.root / ENV_VARS
    entries = json.loads(path.read_text(encoding="utf-8"))
    shared = entries.get("Parameters", {})
    for name, value in changes.items():
        if value is None and name not in entries[function]:
            # Set for every function in "Parameters": keep it for all the others.
            kept = shared.pop(name)
            for other, entry in entries.items():
                if other not in ("Parameters", function):
                    entry[name] = kept
        elif value is None:
            del entries[function][name]
        else:
            entries[function][name] = value
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")


# ---------------------------------------------------------------------------------------------- event-samples
def test_a_sample_missing_an_input_key_is_caught(planted: PlantedCopy) -> None:
    # Given cleanup's tick sample without the schedule ARN the Input carries
    sample = json.loads((planted.root / CLEANUP_EVENTS / "tick.json").read_text())
    del sample["schedule_arn"]
    planted.write(f"{CLEANUP_EVENTS}/tick.json", json.dumps(sample))

    violations = planted.violations("event-samples")

    found(
        violations,
        file=f"{CLEANUP_EVENTS}/tick.json",
        resource=f"{HOURLY_JOB.stem}Function",
        containing="missing ['schedule_arn']",
    )


def test_a_missing_sample_is_caught(planted: PlantedCopy) -> None:
    planted.delete(f"{CLEANUP_EVENTS}/retry.json")

    violations = planted.violations("event-samples")

    found(
        violations, file=f"{CLEANUP_EVENTS}/retry.json", resource=f"{HOURLY_JOB.stem}Function", containing="is missing"
    )


def test_a_malformed_sample_that_parses_is_caught(planted: PlantedCopy) -> None:
    planted.write(f"{CLEANUP_EVENTS}/malformed.json", (planted.root / CLEANUP_EVENTS / "tick.json").read_text())

    violations = planted.violations("event-samples")

    found(
        violations,
        file=f"{CLEANUP_EVENTS}/malformed.json",
        resource=f"{HOURLY_JOB.stem}Function",
        containing="parses as a valid tick",
    )


def test_a_tick_sample_the_kit_rejects_is_caught(planted: PlantedCopy) -> None:
    sample = json.loads((planted.root / CLEANUP_EVENTS / "tick.json").read_text())
    sample["scheduled_time"] = "2026-11-29T09:00:00"  # no zone
    planted.write(f"{CLEANUP_EVENTS}/tick.json", json.dumps(sample))

    violations = planted.violations("event-samples")

    found(
        violations,
        file=f"{CLEANUP_EVENTS}/tick.json",
        resource=f"{HOURLY_JOB.stem}Function",
        containing="has no time zone",
    )


def test_a_retry_sample_that_is_not_a_redelivery_is_caught(planted: PlantedCopy) -> None:
    sample = json.loads((planted.root / CLEANUP_EVENTS / "retry.json").read_text())
    sample["attempt"] = "1"
    planted.write(f"{CLEANUP_EVENTS}/retry.json", json.dumps(sample))

    violations = planted.violations("event-samples")

    found(
        violations, file=f"{CLEANUP_EVENTS}/retry.json", resource=f"{HOURLY_JOB.stem}Function", containing="redelivery"
    )


def test_a_function_missing_from_the_env_vars_file_is_caught(planted: PlantedCopy) -> None:
    entries = json.loads((planted.root / ENV_VARS).read_text())
    del entries[f"{HOURLY_JOB.stem}Function"]
    planted.write(ENV_VARS, json.dumps(entries))

    violations = planted.violations("event-samples")

    found(violations, file=ENV_VARS, resource=f"{HOURLY_JOB.stem}Function", containing="has no entry")


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        ({"SESSIONS_TABLE_NAME": None}, "SESSIONS_TABLE_NAME (a table) is not overridden"),
        ({"SESSIONS_TABLE_NAME": "sessions-prod"}, "names that table 'SessionsTable'"),
        ({"AWS_ENDPOINT_URL_DYNAMODB": None}, "not a local endpoint"),
        ({"AWS_ENDPOINT_URL_DYNAMODB": "https://dynamodb.us-east-1.amazonaws.com"}, "not a local endpoint"),
        ({"SESSION_TABLE": "SessionsTable"}, "does not declare SESSION_TABLE, so SAM ignores it"),
    ],
    ids=["table-variable-missing", "wrong-local-table", "no-endpoint", "remote-endpoint", "undeclared-variable"],
)
def test_an_env_vars_entry_that_does_not_point_the_function_at_local_tables_is_caught(
    planted: PlantedCopy, changes: dict[str, str | None], complaint: str
) -> None:
    _edit_env_vars(planted, f"{HOURLY_JOB.stem}Function", **changes)

    violations = planted.violations("event-samples")

    found(violations, file=ENV_VARS, resource=f"{HOURLY_JOB.stem}Function", containing=complaint)


def test_a_function_using_tables_without_a_declared_endpoint_is_caught(planted: PlantedCopy) -> None:
    # Given Globals no longer declaring the endpoint variable, which SAM then refuses to override
    planted.replace(TEMPLATE, '        AWS_ENDPOINT_URL_DYNAMODB: ""\n', "")

    violations = planted.violations("event-samples")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="does not declare AWS_ENDPOINT")
    found(violations, file=ENV_VARS, resource=f"{HOURLY_JOB.stem}Function", containing="so SAM ignores it")


def test_a_worker_missing_from_the_env_vars_file_is_caught(planted: PlantedCopy) -> None:
    entries = json.loads((planted.root / ENV_VARS).read_text())
    del entries[f"{DAILY_JOB.stem}WorkerFunction"]
    planted.write(ENV_VARS, json.dumps(entries))

    violations = planted.violations("event-samples")

    found(violations, file=ENV_VARS, resource=f"{DAILY_JOB.stem}WorkerFunction", containing="has no entry")


@pytest.mark.parametrize(
    ("function", "changes", "complaint"),
    [
        (
            f"{HOURLY_JOB.stem}Function",
            {"WORK_QUEUE_URL": None},
            f"WORK_QUEUE_URL (the queue {HOURLY_JOB.stem}WorkQueue)",
        ),
        (
            f"{HOURLY_JOB.stem}WorkerFunction",
            {"WORK_DEAD_LETTER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq"},
            "not the local queue's URL",
        ),
        (
            f"{DAILY_JOB.stem}WorkerFunction",
            {"WORK_QUEUE_URL": f"http://host.docker.internal:8765/123456789012/{HOURLY_JOB.stem}WorkQueue"},
            f"WORK_QUEUE_URL (the queue {DAILY_JOB.stem}WorkQueue)",
        ),
        (f"{DAILY_JOB.stem}WorkerFunction", {"AWS_ENDPOINT_URL_SQS": None}, "could reach a real queue"),
    ],
    ids=["coordinator-queue-missing", "remote-dead-letter-queue", "another-jobs-queue", "no-sqs-endpoint"],
)
def test_an_env_vars_entry_that_does_not_point_at_local_queues_is_caught(
    planted: PlantedCopy, function: str, changes: dict[str, str | None], complaint: str
) -> None:
    _edit_env_vars(planted, function, **changes)

    violations = planted.violations("event-samples")

    found(violations, file=ENV_VARS, resource=function, containing=complaint)


def test_a_function_using_queues_without_a_declared_sqs_endpoint_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, '        AWS_ENDPOINT_URL_SQS: ""\n', "")

    violations = planted.violations("event-samples")

    found(violations, file=TEMPLATE, resource=f"{DAILY_JOB.stem}WorkerFunction", containing="does not declare AWS_ENDP")
    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="uses queues")
