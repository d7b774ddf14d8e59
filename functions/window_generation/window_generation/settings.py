from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clockless.config import ConfigurationError, env_list, env_str
from clockless.schedule.zones import is_iana_zone


@dataclass(frozen=True, slots=True)
class WindowGenerationSettings:
    programs_table: str
    windows_table: str
    operating_time_zones: tuple[str, ...]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WindowGenerationSettings:
        zones = env_list("OPERATING_TIME_ZONES", environ)
        for zone in zones:
            if not is_iana_zone(zone):
                raise ConfigurationError(f"OPERATING_TIME_ZONES names an unknown IANA zone: {zone!r}")
        return cls(
            programs_table=env_str("PROGRAMS_TABLE_NAME", environ),
            windows_table=env_str("WINDOWS_TABLE_NAME", environ),
            operating_time_zones=zones,
        )
