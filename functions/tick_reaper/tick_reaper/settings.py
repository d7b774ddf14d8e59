from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from clockless.config import env_int, env_str, ledger_table_name
from clockless.reaper import ReapedJob, parse_reaped_jobs


@dataclass(frozen=True, slots=True)
class TickReaperSettings:
    ledger_table: str
    # The fanned-out jobs and their bounds (their grace), as template.yaml's Globals lists them.
    jobs: tuple[ReapedJob, ...]
    # How far before a bound a tick may have been scheduled and still be looked at (a buffered tick
    # started late, a reaper tick that was missed).
    lookback: timedelta

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TickReaperSettings:
        return cls(
            ledger_table=ledger_table_name(environ),
            jobs=parse_reaped_jobs(env_str("REAPED_JOBS", environ)),
            lookback=timedelta(hours=env_int("REAPER_LOOKBACK_HOURS", environ, minimum=1)),
        )
