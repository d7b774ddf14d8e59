"""clockless job kit: scheduled Lambda jobs that take effect exactly once per tick.

The names below are imported on first use (PEP 562), so a function that needs only part of the
kit (the HTTP trigger reads `clockless.ledger` and `clockless.tick`) does not pay at cold start
for Powertools' idempotency utility, which `clockless.job` imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clockless.config import ConfigurationError as ConfigurationError
    from clockless.errors import ClocklessError as ClocklessError
    from clockless.job import OUTCOME_DUPLICATE as OUTCOME_DUPLICATE
    from clockless.job import OUTCOME_EXECUTED as OUTCOME_EXECUTED
    from clockless.job import OUTCOME_IN_PROGRESS as OUTCOME_IN_PROGRESS
    from clockless.job import KitSettings as KitSettings
    from clockless.job import ScheduledJob as ScheduledJob
    from clockless.run import JobRun as JobRun
    from clockless.tick import MalformedTickError as MalformedTickError
    from clockless.tick import Tick as Tick
    from clockless.tick import Trigger as Trigger
    from clockless.tick import format_scheduled_time as format_scheduled_time
    from clockless.tick import parse_scheduled_time as parse_scheduled_time

_EXPORTS = {
    "ConfigurationError": "clockless.config",
    "ClocklessError": "clockless.errors",
    "OUTCOME_DUPLICATE": "clockless.job",
    "OUTCOME_EXECUTED": "clockless.job",
    "OUTCOME_IN_PROGRESS": "clockless.job",
    "JobRun": "clockless.run",
    "KitSettings": "clockless.job",
    "ScheduledJob": "clockless.job",
    "MalformedTickError": "clockless.tick",
    "Tick": "clockless.tick",
    "Trigger": "clockless.tick",
    "format_scheduled_time": "clockless.tick",
    "parse_scheduled_time": "clockless.tick",
}

__all__ = [
    "OUTCOME_DUPLICATE",
    "OUTCOME_EXECUTED",
    "OUTCOME_IN_PROGRESS",
    "ClocklessError",
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'clockless' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
