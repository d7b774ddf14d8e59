from __future__ import annotations

from typing import Any

import pytest

from clockless import ConfigurationError, KitSettings
from clockless.config import ledger_retention_seconds, metrics_namespace
from clockless.fanout.settings import WorkerSettings
from clockless.job import STORE_ENVIRONMENT, ScheduledJob
from job_trigger.settings import JobTriggerSettings
from session_cleanup.settings import SessionCleanupSettings
from window_generation.settings import WindowGenerationSettings


def test_missing_variable_is_named() -> None:
    with pytest.raises(ConfigurationError, match="IDEMPOTENCY_TABLE_NAME is not set"):
        KitSettings.from_env({"IDEMPOTENCY_EXPIRY_SECONDS": "3600"})


def test_non_integer_is_refused_with_its_value() -> None:
    with pytest.raises(ConfigurationError, match="EMPTY_SESSION_GRACE_MINUTES must be an integer, got 'two hours'"):
        SessionCleanupSettings.from_env({"SESSIONS_TABLE_NAME": "s", "EMPTY_SESSION_GRACE_MINUTES": "two hours"})


def test_expiry_below_a_minute_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=">= 60"):
        KitSettings.from_env({"IDEMPOTENCY_TABLE_NAME": "t", "IDEMPOTENCY_EXPIRY_SECONDS": "5"})


def test_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="Mars/Olympus_Mons"):
        WindowGenerationSettings.from_env(
            {"PROGRAMS_TABLE_NAME": "p", "WINDOWS_TABLE_NAME": "w", "OPERATING_TIME_ZONES": "UTC,Mars/Olympus_Mons"}
        )


def test_zones_are_a_comma_separated_list() -> None:
    settings = WindowGenerationSettings.from_env(
        {
            "PROGRAMS_TABLE_NAME": "p",
            "WINDOWS_TABLE_NAME": "w",
            "OPERATING_TIME_ZONES": "America/New_York, Pacific/Honolulu",
        }
    )
    assert settings.operating_time_zones == ("America/New_York", "Pacific/Honolulu")


# The variables every settings object shares are parsed once, in clockless.config: the kit's, the
# fan-out worker's and the trigger's settings read them alike.
SHARED = {
    "IDEMPOTENCY_TABLE_NAME": "IdempotencyTable",
    "IDEMPOTENCY_EXPIRY_SECONDS": "3600",
    "LEDGER_TABLE_NAME": " LedgerTable ",
    "LEDGER_RETENTION_DAYS": "45",
    "POWERTOOLS_METRICS_NAMESPACE": "Ops",
    "WORK_QUEUE_URL": "https://sqs/work",
    "WORK_DEAD_LETTER_QUEUE_URL": "https://sqs/dlq",
    "JOB_FUNCTIONS": '{"nightly": "arn:aws:lambda:eu-west-1:123456789012:function:nightly"}',
    "JOB_SCHEDULES": '{"nightly": {"ScheduleExpression": "cron(0 3 * * ? *)"}}',
    "TRIGGER_SECRET_ID": "secret",
    "TRIGGER_SECRET_MAX_AGE_SECONDS": "300",
    "TRIGGER_WINDOW_MINUTES": "10",
}


def test_the_ledger_and_the_metrics_namespace_read_alike_in_every_settings_object() -> None:
    kit = KitSettings.from_env(SHARED)
    worker = WorkerSettings.from_env(SHARED)
    trigger = JobTriggerSettings.from_env(SHARED)

    assert kit.ledger_table == worker.ledger_table == trigger.ledger_table == "LedgerTable"
    assert kit.ledger_retention_seconds == worker.ledger_retention_seconds == 45 * 86400
    assert kit.metrics_namespace == worker.metrics_namespace == metrics_namespace(SHARED) == "Ops"


def test_the_metrics_namespace_defaults_to_clockless_when_unset_or_blank() -> None:
    assert metrics_namespace({}) == metrics_namespace({"POWERTOOLS_METRICS_NAMESPACE": "  "}) == "Clockless"


@pytest.mark.parametrize(
    ("value", "complaint"),
    [("0", "LEDGER_RETENTION_DAYS must be >= 1, got 0"), ("a month", "must be an integer, got 'a month'")],
)
def test_a_ledger_retention_below_a_day_or_not_a_number_is_refused(value: str, complaint: str) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        ledger_retention_seconds({"LEDGER_RETENTION_DAYS": value})


class _Recording(dict[str, str]):
    """An environment that remembers which variables were read."""

    def __init__(self, values: dict[str, str]) -> None:
        super().__init__(values)
        self.read: set[str] = set()

    def get(self, name: str, default: object = None) -> Any:
        self.read.add(name)
        return super().get(name, default)

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return super().__getitem__(name)


KIT = {
    "IDEMPOTENCY_TABLE_NAME": "IdempotencyTable",
    "IDEMPOTENCY_EXPIRY_SECONDS": "3600",
    "LEDGER_TABLE_NAME": "LedgerTable",
    "LEDGER_RETENTION_DAYS": "30",
    "AWS_REGION": "us-east-1",
}


def test_the_idempotency_store_is_keyed_on_every_setting_it_is_made_from() -> None:
    # The store is made from KitSettings; a setting read but left out of its key would keep a
    # store made for another table or expiry.
    environ = _Recording(KIT)
    KitSettings.from_env(environ)
    assert environ.read - {"POWERTOOLS_METRICS_NAMESPACE"} <= set(STORE_ENVIRONMENT)


def test_the_idempotency_store_is_made_again_only_when_its_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in KIT.items():
        monkeypatch.setenv(name, value)
    job = ScheduledJob("config-store")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "coordinator")
    first = job.persistence_store()
    # The same job's worker function, as the local runtime runs it in the same process.
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "worker")
    monkeypatch.setenv("WORK_QUEUE_URL", "http://127.0.0.1:1/queue/work")
    assert job.persistence_store() is first
    for name, value in {
        "IDEMPOTENCY_EXPIRY_SECONDS": "7200",
        "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:2",
    }.items():
        monkeypatch.setenv(name, value)
        again = job.persistence_store()
        assert again is not first, f"{name} changed and the store was kept"
        first = again
    assert first.dynamodb.meta.endpoint_url == "http://127.0.0.1:2"
