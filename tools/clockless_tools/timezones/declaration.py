"""What a scheduled function declares in its resource `Metadata` in template.yaml:
the zones it serves and its local-time rule."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import time
from typing import Any

from clockless.schedule.zones import is_iana_zone
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function, Template
from clockless_tools.timezones.rule import (
    CLOCK,
    METADATA_KEY,
    NO_RULE,
    NOT_AFTER,
    NOT_BEFORE,
    RULE_KEY,
    RULE_KEYS,
    SAME_LOCAL_DATE,
    ZONES_KEY,
    DeclarationError,
    LocalTimeRule,
)


@dataclass(frozen=True, slots=True)
class TimeDeclaration:
    """A scheduled function's operating zones and its local-time rule (None: declared `none`)."""

    function_id: str
    zones: tuple[str, ...]
    zones_parameter: str | None
    rule: LocalTimeRule | None


def missing_declaration_keys(function: Function) -> list[str]:
    """The declaration keys `function`'s Metadata lacks (other tools' keys under `clockless` are fine)."""
    block = function.metadata.get(METADATA_KEY)
    if block is not None and not isinstance(block, Mapping):
        raise DeclarationError(f"{function.logical_id}.Metadata.{METADATA_KEY}: expected a mapping, got {block!r}")
    block = block or {}
    return [key for key in (ZONES_KEY, RULE_KEY) if key not in block]


def read_declaration(function: Function, template: Template) -> TimeDeclaration:
    """Parse and validate the declaration; DeclarationError names the key that is wrong."""
    missing = missing_declaration_keys(function)
    where = f"{function.logical_id}.Metadata.{METADATA_KEY}"
    if missing:
        raise DeclarationError(f"{where}: missing {', '.join(missing)}")
    block = function.metadata[METADATA_KEY]
    zones, parameter = _read_zones(block[ZONES_KEY], template, f"{where}.{ZONES_KEY}")
    rule = _read_rule(block[RULE_KEY], f"{where}.{RULE_KEY}")
    return TimeDeclaration(function.logical_id, zones, parameter, rule)


def _read_zones(value: Any, template: Template, where: str) -> tuple[tuple[str, ...], str | None]:
    parameter = None
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        parameter = str(value["Ref"])
        if parameter not in (template.document.get("Parameters") or {}):
            raise DeclarationError(f"{where}: !Ref {parameter} names no parameter of the template")
        value = template.parameter_default(parameter)
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DeclarationError(
            f"{where}: expected a list of IANA zones or !Ref to a CommaDelimitedList parameter, got {value!r}"
        )
    return parse_zones([item.strip() for item in value], where), parameter


def parse_zones(value: list[str], where: str) -> tuple[str, ...]:
    """IANA zones, each known and listed once; DeclarationError names `where` and the zone."""
    zones = tuple(value)
    if not zones or "" in zones:
        raise DeclarationError(f"{where}: names an empty zone in {list(zones)!r}")
    for zone in zones:
        if not is_iana_zone(zone):
            raise DeclarationError(f"{where}: {zone!r} is not an IANA time zone")
    repeated = sorted(zone for zone, count in Counter(zones).items() if count > 1)
    if repeated:
        raise DeclarationError(f"{where}: lists {', '.join(repeated)} more than once")
    return zones


def parse_rule(value: Any, where: str) -> LocalTimeRule | None:
    """A local-time rule as the declaration states it (`none`, a mapping, or one string such as
    `not_before=04:00,same_local_date`); DeclarationError names `where`."""
    return _read_rule(value, where)


def _read_rule(value: Any, where: str) -> LocalTimeRule | None:
    if value == NO_RULE:
        return None
    if isinstance(value, str) and set(_rule_from_text(value)) <= set(RULE_KEYS):
        value = _rule_from_text(value)
    if not isinstance(value, Mapping):
        raise DeclarationError(
            f"{where}: expected {NO_RULE!r} or a mapping of {', '.join(RULE_KEYS)} (or that as one string, "
            f"e.g. 'not_before=04:00,same_local_date'); got {value!r}"
        )
    unknown = sorted(str(key) for key in value if key not in RULE_KEYS)
    if unknown:
        raise DeclarationError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(RULE_KEYS)}")
    same_local_date = value.get(SAME_LOCAL_DATE, False)
    if not isinstance(same_local_date, bool):
        raise DeclarationError(f"{where}.{SAME_LOCAL_DATE}: expected true or false, got {same_local_date!r}")
    rule = LocalTimeRule(
        not_before=_read_clock(value.get(NOT_BEFORE), f"{where}.{NOT_BEFORE}"),
        not_after=_read_clock(value.get(NOT_AFTER), f"{where}.{NOT_AFTER}"),
        same_local_date=same_local_date,
    )
    if rule.not_before is None and rule.not_after is None and not rule.same_local_date:
        raise DeclarationError(f"{where}: checks nothing; write {NO_RULE!r} if no local time matters to the job")
    if rule.not_before is not None and rule.not_after is not None and rule.not_before > rule.not_after:
        raise DeclarationError(f"{where}: {NOT_BEFORE} {rule.not_before:%H:%M} is later than {NOT_AFTER}")
    return rule


def _rule_from_text(text: str) -> dict[str, Any]:
    """A rule written as one string, as a job's declaration in Mappings holds it (a mapping's values are
    strings): `not_before=04:00,same_local_date` is `{not_before: "04:00", same_local_date: true}`."""
    rule: dict[str, Any] = {}
    for part in (part.strip() for part in text.split(",")):
        key, has_value, clock = part.partition("=")
        rule[key.strip()] = clock.strip() if has_value else True
    return rule


def _read_clock(value: Any, where: str) -> time | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        # YAML 1.1 reads an unquoted 04:00 as the base-60 integer 240.
        raise DeclarationError(f'{where}: {value!r} is a number; quote the time, e.g. "04:00"')
    match = CLOCK.match(str(value))
    if match is None:
        raise DeclarationError(f'{where}: {value!r} is not a 24-hour HH:MM time such as "04:00"')
    return time(int(match.group(1)), int(match.group(2)))


def with_parameter_overrides(template: Template, overrides: Mapping[str, str]) -> Template:
    """The template as a deploy with `--parameter-overrides` sees it: the overrides become the defaults."""
    if not overrides:
        return template
    document = copy.deepcopy(dict(template.document))
    parameters = document.get("Parameters") or {}
    for name, value in overrides.items():
        if name not in parameters:
            known = ", ".join(sorted(parameters)) or "none"
            raise TemplateError(f"parameter override {name}: the template declares no such parameter (known: {known})")
        parameters[name]["Default"] = value
    return Template(path=template.path, document=document)
