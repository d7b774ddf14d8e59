"""The trigger's configuration, read once from the environment template.yaml sets."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from clockless.config import ConfigurationError, env_int, env_str, ledger_table_name


@dataclass(frozen=True, slots=True)
class JobTriggerSettings:
    # Job name -> ARN of the function that runs its ticks; template.yaml is the source of truth.
    job_functions: Mapping[str, str]
    ledger_table: str
    # Where each request id's first answer is kept for the window (the idempotency table).
    requests_table: str
    secret_id: str
    secret_max_age_seconds: int
    window: timedelta

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JobTriggerSettings:
        return cls(
            job_functions=_job_functions(env_str("JOB_FUNCTIONS", environ)),
            ledger_table=ledger_table_name(environ),
            requests_table=env_str("IDEMPOTENCY_TABLE_NAME", environ),
            secret_id=env_str("TRIGGER_SECRET_ID", environ),
            secret_max_age_seconds=env_int("TRIGGER_SECRET_MAX_AGE_SECONDS", environ, minimum=0),
            window=timedelta(minutes=env_int("TRIGGER_WINDOW_MINUTES", environ, minimum=1)),
        )


def _job_functions(raw: str) -> dict[str, str]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"environment variable JOB_FUNCTIONS is not JSON: {error.msg}") from None
    if not isinstance(parsed, dict) or not parsed:
        raise ConfigurationError('environment variable JOB_FUNCTIONS must be a JSON object {"<job>": "<function arn>"}')
    for job, arn in parsed.items():
        if not isinstance(arn, str) or not arn.startswith("arn:"):
            raise ConfigurationError(f"environment variable JOB_FUNCTIONS maps job {job!r} to {arn!r}, not an ARN")
    return dict(parsed)
