"""clockless job kit: scheduled Lambda jobs that take effect exactly once per tick."""

from clockless.config import ConfigurationError
from clockless.job import (
    OUTCOME_DUPLICATE,
    OUTCOME_EXECUTED,
    OUTCOME_IN_PROGRESS,
    JobRun,
    KitSettings,
    ScheduledJob,
)
from clockless.tick import MalformedTickError, Tick, Trigger, format_scheduled_time, parse_scheduled_time

__all__ = [
    "OUTCOME_DUPLICATE",
    "OUTCOME_EXECUTED",
    "OUTCOME_IN_PROGRESS",
    "ConfigurationError",
    "JobRun",
    "KitSettings",
    "MalformedTickError",
    "ScheduledJob",
    "Tick",
    "Trigger",
    "format_scheduled_time",
    "parse_scheduled_time",
]
