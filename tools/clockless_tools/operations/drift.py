"""`clockless drift`: each deployed schedule (GetSchedule) against template.yaml, field by field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clockless_tools.operations.targets import JobTarget, ScheduleNotDeployed
from clockless_tools.template.model import Template

# The fields compared, as paths into GetSchedule's response.
FIELDS: tuple[tuple[str, ...], ...] = (
    ("ScheduleExpression",),
    ("ScheduleExpressionTimezone",),
    ("State",),
    ("FlexibleTimeWindow",),
    ("Target", "RetryPolicy"),
    ("Target", "DeadLetterConfig", "Arn"),
    ("Target", "Arn"),
    ("Target", "Input"),
)


@dataclass(frozen=True)
class FieldDrift:
    field: str
    template: Any
    deployed: Any

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "template": self.template, "deployed": self.deployed}


@dataclass
class ScheduleDrift:
    job: str
    schedule: str
    found: bool = True
    fields: list[FieldDrift] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        return not self.found or bool(self.fields)

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "schedule": self.schedule,
            "found": self.found,
            "drifted": [f.as_dict() for f in self.fields],
        }


def _at(document: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = document
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _normal(value: Any) -> Any:
    """Mappings compared with numbers as numbers (the API returns ints the template may quote)."""
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in value.items()}
    return value


def schedule_drift(target: JobTarget, template: Template, job: str) -> ScheduleDrift:
    try:
        ref = target.schedule(job)
    except ScheduleNotDeployed:
        schedule = template.jobs[job]
        return ScheduleDrift(job=job, schedule=f"{schedule.function_id}{schedule.event_id}", found=False)
    drift = ScheduleDrift(job=job, schedule=f"{ref.group}/{ref.name}")
    try:
        deployed = ref.get()
    except ref.client.exceptions.ResourceNotFoundException:
        drift.found = False
        return drift
    for path in FIELDS:
        expected, actual = _normal(_at(ref.expected, path)), _normal(_at(deployed, path))
        if expected != actual:
            drift.fields.append(FieldDrift(".".join(path), expected, actual))
    return drift


def describe(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, (Mapping, list)) else repr(value)
