"""The fan-out's settings, from the environment template.yaml sets on coordinators and workers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from clockless.config import ConfigurationError, env_int, env_str

DEFAULT_PAGE_SIZE: Final = 490
DEFAULT_CONCURRENCY: Final = 4
DEFAULT_TIME_BUDGET_SECONDS: Final = 30
DEFAULT_METRICS_NAMESPACE: Final = "Clockless"
# DynamoDB's Query returns at most 1 MB per page anyway; more than this is a typo.
MAX_PAGE_SIZE: Final = 10_000
MAX_CONCURRENCY: Final = 64


def _optional_int(name: str, default: int, environ: Mapping[str, str], *, minimum: int, maximum: int) -> int:
    if not environ.get(name, "").strip():
        return default
    value = env_int(name, environ, minimum=minimum)
    if value > maximum:
        raise ConfigurationError(f"environment variable {name} must be <= {maximum}, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    work_queue_url: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CoordinatorSettings:
        return cls(work_queue_url=env_str("WORK_QUEUE_URL", os.environ if environ is None else environ))


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    work_queue_url: str
    dead_letter_queue_url: str
    ledger_table: str
    ledger_retention_seconds: int
    page_size: int
    concurrency: int
    time_budget_ms: int
    metrics_namespace: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerSettings:
        env = os.environ if environ is None else environ
        return cls(
            work_queue_url=env_str("WORK_QUEUE_URL", env),
            dead_letter_queue_url=env_str("WORK_DEAD_LETTER_QUEUE_URL", env),
            ledger_table=env_str("LEDGER_TABLE_NAME", env),
            ledger_retention_seconds=env_int("LEDGER_RETENTION_DAYS", env, minimum=1) * 86400,
            page_size=_optional_int("WORK_PAGE_SIZE", DEFAULT_PAGE_SIZE, env, minimum=1, maximum=MAX_PAGE_SIZE),
            concurrency=_optional_int("WORK_CONCURRENCY", DEFAULT_CONCURRENCY, env, minimum=1, maximum=MAX_CONCURRENCY),
            time_budget_ms=1000
            * _optional_int("WORK_TIME_BUDGET_SECONDS", DEFAULT_TIME_BUDGET_SECONDS, env, minimum=1, maximum=900),
            metrics_namespace=env.get("POWERTOOLS_METRICS_NAMESPACE", "") or DEFAULT_METRICS_NAMESPACE,
        )
