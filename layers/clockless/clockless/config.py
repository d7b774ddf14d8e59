"""Reading the environment the template sets, once, with errors that name the variable."""

from __future__ import annotations

import os
from collections.abc import Mapping


class ConfigurationError(RuntimeError):
    """The function's environment does not match what template.yaml declares."""


def env_str(name: str, environ: Mapping[str, str] | None = None) -> str:
    value = (os.environ if environ is None else environ).get(name, "").strip()
    if not value:
        raise ConfigurationError(f"environment variable {name} is not set (template.yaml sets it)")
    return value


def env_int(name: str, environ: Mapping[str, str] | None = None, *, minimum: int = 0) -> int:
    raw = env_str(name, environ)
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"environment variable {name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigurationError(f"environment variable {name} must be >= {minimum}, got {value}")
    return value


def env_list(name: str, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """A comma-separated list (CloudFormation has no list-typed environment variables)."""
    items = tuple(part.strip() for part in env_str(name, environ).split(",") if part.strip())
    if not items:
        raise ConfigurationError(f"environment variable {name} must list at least one value")
    return items
