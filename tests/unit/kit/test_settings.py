"""The fan-out's settings: defaults, bounds, and errors that name the variable."""

from __future__ import annotations

import pytest

from clockless.config import ConfigurationError
from clockless.fanout.settings import CoordinatorSettings, WorkerSettings

WORKER = {
    "WORK_QUEUE_URL": "https://sqs/work",
    "WORK_DEAD_LETTER_QUEUE_URL": "https://sqs/dlq",
    "LEDGER_TABLE_NAME": "LedgerTable",
    "LEDGER_RETENTION_DAYS": "30",
}


def test_a_worker_has_sensible_defaults() -> None:
    settings = WorkerSettings.from_env(WORKER)
    assert (settings.page_size, settings.concurrency, settings.time_budget_ms) == (490, 4, 30_000)
    assert settings.ledger_retention_seconds == 30 * 86400
    assert settings.metrics_namespace == "Clockless"
    # DynamoDB's per-partition-key limit, a moved index entry per item, AIMD floor and step
    assert (settings.key_write_units_per_s, settings.key_write_units_per_item) == (1000, 2)
    assert (settings.min_write_units_per_s, settings.rate_increase_units) == (50, 25)
    assert settings.pacing().max_units_per_s == 1000


def test_pacing_is_set_from_the_environment() -> None:
    settings = WorkerSettings.from_env(
        WORKER
        | {
            "WORK_KEY_WRITE_UNITS_PER_SECOND": "40",
            "WORK_KEY_WRITE_UNITS_PER_ITEM": "1",
            "WORK_MIN_WRITE_UNITS_PER_SECOND": "100",
            "WORK_RATE_INCREASE_UNITS": "5",
        }
    )
    pacing = settings.pacing()
    # a floor above the ceiling is the ceiling
    assert (pacing.max_units_per_s, pacing.min_units_per_s, pacing.increase_units_per_s) == (40, 40, 5)
    assert settings.key_write_units_per_item == 1


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("WORK_DEAD_LETTER_QUEUE_URL", "", "WORK_DEAD_LETTER_QUEUE_URL is not set"),
        ("WORK_PAGE_SIZE", "0", "WORK_PAGE_SIZE must be >= 1"),
        ("WORK_PAGE_SIZE", "many", "WORK_PAGE_SIZE must be an integer"),
        ("WORK_CONCURRENCY", "65", "WORK_CONCURRENCY must be <= 64"),
        ("WORK_TIME_BUDGET_SECONDS", "0", "WORK_TIME_BUDGET_SECONDS must be >= 1"),
        ("WORK_KEY_WRITE_UNITS_PER_SECOND", "0", "WORK_KEY_WRITE_UNITS_PER_SECOND must be >= 1"),
        ("WORK_KEY_WRITE_UNITS_PER_SECOND", "fast", "WORK_KEY_WRITE_UNITS_PER_SECOND must be an integer"),
        ("WORK_MIN_WRITE_UNITS_PER_SECOND", "0", "WORK_MIN_WRITE_UNITS_PER_SECOND must be >= 1"),
        ("WORK_RATE_INCREASE_UNITS", "0", "WORK_RATE_INCREASE_UNITS must be >= 1"),
    ],
)
def test_a_bad_worker_setting_names_the_variable(name: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        WorkerSettings.from_env(WORKER | {name: value})


def test_a_coordinator_needs_only_its_queue() -> None:
    assert CoordinatorSettings.from_env({"WORK_QUEUE_URL": "https://sqs/work"}).work_queue_url == "https://sqs/work"
    with pytest.raises(ConfigurationError, match="WORK_QUEUE_URL is not set"):
        CoordinatorSettings.from_env({})
