"""A local-time rule (not before, not after, same local date) and the ticks that breach it in a set of zones."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from clockless_tools.template.loader import TemplateError

METADATA_KEY = "clockless"
ZONES_KEY = "operating_time_zones"
RULE_KEY = "local_time_rule"
NO_RULE = "none"
REQUIRED_SCHEDULE_TIMEZONE = "UTC"
# A function that reads its zones from the environment must read the zones it declares.
ZONES_ENVIRONMENT_VARIABLE = "OPERATING_TIME_ZONES"

# Rule names, as reported and in --json.
NOT_BEFORE = "not_before"
NOT_AFTER = "not_after"
SAME_LOCAL_DATE = "same_local_date"
UTC_SCHEDULE = "utc_schedule"
DECLARED = "declared"
ZONES_MATCH_ENVIRONMENT = "zones_match_environment"
# A job's Schedule is the cron its LocalTime gives in its zones, and LOCAL_TIME says the same time.
LOCAL_TIME_SCHEDULE = "local_time_schedule"
# The kit reads a job's local time from the environment: it must be the one the Metadata declares.
LOCAL_TIME_ENVIRONMENT_VARIABLE = "LOCAL_TIME"

RULE_KEYS = (NOT_BEFORE, NOT_AFTER, SAME_LOCAL_DATE)
CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
# Offsets change at most a few times a year; a daily probe cannot step over two changes.
OFFSET_PROBE = timedelta(days=1)


class DeclarationError(TemplateError):
    """A time-zone declaration in template.yaml is malformed; the message names the function and key."""


@dataclass(frozen=True, slots=True)
class LocalTimeRule:
    """What every tick must look like in every operating zone (bounds inclusive, to the minute)."""

    not_before: time | None = None
    not_after: time | None = None
    same_local_date: bool = False

    def describe(self) -> str:
        parts = []
        if self.not_before is not None:
            parts.append(f"at or after {self.not_before:%H:%M} local")
        if self.not_after is not None:
            parts.append(f"at or before {self.not_after:%H:%M} local")
        if self.same_local_date:
            parts.append("on the same local date in every zone")
        return " and ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            NOT_BEFORE: None if self.not_before is None else f"{self.not_before:%H:%M}",
            NOT_AFTER: None if self.not_after is None else f"{self.not_after:%H:%M}",
            SAME_LOCAL_DATE: self.same_local_date,
        }


@dataclass(frozen=True, slots=True)
class Breach:
    """One zone in which one tick breaks one part of a rule."""

    rule: str
    zone: str
    local_time: datetime
    detail: str
    # For same_local_date: this zone's local date minus the date most zones share.
    days_off: int = 0


def local_times(tick: datetime, zones: Sequence[str]) -> dict[str, datetime]:
    """The tick's wall-clock time in each zone."""
    return {zone: tick.astimezone(ZoneInfo(zone)) for zone in zones}


def shared_date(local: Mapping[str, datetime]) -> date:
    """The local date most zones are on; on a tie, the date of the first zone among the tied."""
    counts = Counter(moment.date() for moment in local.values())
    most = max(counts.values())
    return next(moment.date() for moment in local.values() if counts[moment.date()] == most)


def breaches(rule: LocalTimeRule, tick: datetime, zones: Sequence[str]) -> list[Breach]:
    """Every way `tick` breaks `rule` in `zones`, in zone order; empty when it keeps the rule."""
    local = local_times(tick, zones)
    found: list[Breach] = []
    reference = shared_date(local) if rule.same_local_date else None
    for zone, moment in local.items():
        clock = moment.time().replace(tzinfo=None)
        if rule.not_before is not None and clock < rule.not_before:
            found.append(Breach(NOT_BEFORE, zone, moment, f"before {rule.not_before:%H:%M} local"))
        if rule.not_after is not None and clock > rule.not_after.replace(second=59, microsecond=999999):
            found.append(Breach(NOT_AFTER, zone, moment, f"after {rule.not_after:%H:%M} local"))
        if reference is not None and moment.date() != reference:
            days_off = (moment.date() - reference).days
            found.append(Breach(SAME_LOCAL_DATE, zone, moment, _date_detail(days_off), days_off=days_off))
    return found


def _date_detail(days_off: int) -> str:
    if abs(days_off) == 1:
        return f"a day {'behind' if days_off < 0 else 'ahead of'} most zones"
    return f"{abs(days_off)} days {'behind' if days_off < 0 else 'ahead of'} most zones"
