"""The job's `settings.py`: the table its handlers read from the environment the template sets."""

from __future__ import annotations

from typing import Final

SETTINGS: Final = """from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clockless.config import env_str


@dataclass(frozen=True, slots=True)
class __STEM__Settings:
    items_table: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> __STEM__Settings:
        return cls(items_table=env_str("__ENV___TABLE_NAME", environ))
"""
