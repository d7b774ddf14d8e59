"""Nightly window generation: thin handler over `logic.generate_windows`."""

from __future__ import annotations

import functools

from clockless import JobRun, ScheduledJob
from window_generation.logic import business_date_of, generate_windows
from window_generation.repository import DynamoProgramStore
from window_generation.settings import WindowGenerationSettings

JOB_NAME = "window-generation"
job = ScheduledJob(JOB_NAME)


@functools.cache
def _settings() -> WindowGenerationSettings:
    return WindowGenerationSettings.from_env()


@functools.cache
def _store() -> DynamoProgramStore:
    settings = _settings()
    return DynamoProgramStore(settings.programs_table, settings.windows_table)


@job.handler
def lambda_handler(run: JobRun) -> dict[str, int | str]:
    business_date = business_date_of(run.tick.scheduled_time, _settings().operating_time_zones)
    result = generate_windows(_store(), business_date=business_date, tick_key=run.tick.key)
    return result.as_summary()
