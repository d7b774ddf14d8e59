"""Nightly window generation: the tick's coordinator. It reads no program: it fans the tick out,
one message per due-index shard, and `window_generation.worker` rolls the programs forward."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from clockless import JobRun, ScheduledJob
from clockless.fanout import FanOut
from window_generation.logic import business_date_of
from window_generation.repository import DUE_INDEX_PARTITIONS, DynamoProgramStore
from window_generation.settings import WindowGenerationSettings

JOB_NAME = "window-generation"
job = ScheduledJob(JOB_NAME)
work = FanOut(job, partitions=DUE_INDEX_PARTITIONS)


@functools.cache
def settings() -> WindowGenerationSettings:
    return WindowGenerationSettings.from_env()


@functools.cache
def program_store() -> DynamoProgramStore:
    return DynamoProgramStore(settings().programs_table, settings().windows_table)


@job.handler
def lambda_handler(run: JobRun) -> Mapping[str, Any]:
    business_date = business_date_of(run.tick.scheduled_time, settings().operating_time_zones)
    return work.start(run, params={"business_date": business_date.isoformat()})
