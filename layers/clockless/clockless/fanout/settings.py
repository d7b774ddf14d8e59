"""The fan-out's settings, from the environment template.yaml sets on coordinators and workers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from clockless.config import (
    ConfigurationError,
    env_int,
    env_str,
    environment,
    ledger_retention_seconds,
    ledger_table_name,
    metrics_namespace,
)
from clockless.fanout.pacing import PacingSettings

DEFAULT_PAGE_SIZE: Final = 490
DEFAULT_CONCURRENCY: Final = 4
DEFAULT_TIME_BUDGET_SECONDS: Final = 30
# Pacing (docs/fan-out.md, "Pacing"). DynamoDB holds every partition of a table or index to 1,000
# write units per second ("Best practices for designing and using partition keys effectively",
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html):
# one worker writes its own shard key of the due index, so it offers it at most that.
DEFAULT_KEY_WRITE_UNITS_PER_SECOND: Final = 1000
# An applied item moves within the index (a delete and a put, up to 1 KB each) or leaves it (1).
DEFAULT_KEY_WRITE_UNITS_PER_ITEM: Final = 2
# The adaptive rate never goes below this (5 % of the limit) and creeps up by this much after
# each transaction applied without a throttle (from half the limit back to it in 20 transactions).
DEFAULT_MIN_WRITE_UNITS_PER_SECOND: Final = 50
DEFAULT_RATE_INCREASE_UNITS: Final = 25
MAX_KEY_WRITE_UNITS_PER_SECOND: Final = 1_000_000
# DynamoDB's Query returns at most 1 MB per page anyway; more than this is a typo.
MAX_PAGE_SIZE: Final = 10_000
MAX_CONCURRENCY: Final = 64
# The work queue's RedrivePolicy maxReceiveCount in template.yaml (rule work-queue-redrive).
DEFAULT_MAX_RECEIVES: Final = 5


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
        return cls(work_queue_url=env_str("WORK_QUEUE_URL", environ))


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
    key_write_units_per_s: int = DEFAULT_KEY_WRITE_UNITS_PER_SECOND
    key_write_units_per_item: int = DEFAULT_KEY_WRITE_UNITS_PER_ITEM
    min_write_units_per_s: int = DEFAULT_MIN_WRITE_UNITS_PER_SECOND
    rate_increase_units: int = DEFAULT_RATE_INCREASE_UNITS
    # The work queue's maxReceiveCount: a run failing on this receive records its partition exhausted.
    max_receives: int = DEFAULT_MAX_RECEIVES

    def pacing(self) -> PacingSettings:
        return PacingSettings(
            max_units_per_s=self.key_write_units_per_s,
            min_units_per_s=min(self.min_write_units_per_s, self.key_write_units_per_s),
            increase_units_per_s=self.rate_increase_units,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerSettings:
        env = environment(environ)
        return cls(
            work_queue_url=env_str("WORK_QUEUE_URL", env),
            dead_letter_queue_url=env_str("WORK_DEAD_LETTER_QUEUE_URL", env),
            ledger_table=ledger_table_name(env),
            ledger_retention_seconds=ledger_retention_seconds(env),
            page_size=_optional_int("WORK_PAGE_SIZE", DEFAULT_PAGE_SIZE, env, minimum=1, maximum=MAX_PAGE_SIZE),
            concurrency=_optional_int("WORK_CONCURRENCY", DEFAULT_CONCURRENCY, env, minimum=1, maximum=MAX_CONCURRENCY),
            time_budget_ms=1000
            * _optional_int("WORK_TIME_BUDGET_SECONDS", DEFAULT_TIME_BUDGET_SECONDS, env, minimum=1, maximum=900),
            metrics_namespace=metrics_namespace(env),
            max_receives=_optional_int("WORK_MAX_RECEIVES", DEFAULT_MAX_RECEIVES, env, minimum=1, maximum=1000),
            **_pacing_from_env(env),
        )


def _pacing_from_env(env: Mapping[str, str]) -> dict[str, int]:
    limit = MAX_KEY_WRITE_UNITS_PER_SECOND
    return {
        "key_write_units_per_s": _optional_int(
            "WORK_KEY_WRITE_UNITS_PER_SECOND", DEFAULT_KEY_WRITE_UNITS_PER_SECOND, env, minimum=1, maximum=limit
        ),
        "key_write_units_per_item": _optional_int(
            "WORK_KEY_WRITE_UNITS_PER_ITEM", DEFAULT_KEY_WRITE_UNITS_PER_ITEM, env, minimum=0, maximum=400
        ),
        "min_write_units_per_s": _optional_int(
            "WORK_MIN_WRITE_UNITS_PER_SECOND", DEFAULT_MIN_WRITE_UNITS_PER_SECOND, env, minimum=1, maximum=limit
        ),
        "rate_increase_units": _optional_int(
            "WORK_RATE_INCREASE_UNITS", DEFAULT_RATE_INCREASE_UNITS, env, minimum=1, maximum=limit
        ),
    }
