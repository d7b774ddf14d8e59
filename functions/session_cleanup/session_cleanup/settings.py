from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from clockless.config import env_int, env_str


@dataclass(frozen=True, slots=True)
class SessionCleanupSettings:
    sessions_table: str
    grace: timedelta
    late_arrival: timedelta

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SessionCleanupSettings:
        return cls(
            sessions_table=env_str("SESSIONS_TABLE_NAME", environ),
            grace=timedelta(minutes=env_int("EMPTY_SESSION_GRACE_MINUTES", environ, minimum=1)),
            late_arrival=timedelta(minutes=env_int("EMPTY_SESSION_LATE_ARRIVAL_MINUTES", environ, minimum=0)),
        )
