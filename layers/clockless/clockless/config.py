"""Reading the environment the template sets, once, with errors that name the variable."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Final


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


# What decides where a client connects: botocore reads these when it makes one.
CLIENT_ENVIRONMENT: Final = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_SQS",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


class PerEnvironment[T]:
    """A value made from the environment on first use, and made again only when the environment
    variables it was made from have changed. In Lambda a process's environment never changes, so
    that is once per execution environment; the local runtime runs a function's module under
    several environments in turn (one embedded server, then another), and a client made for the
    first must not carry on talking to it."""

    def __init__(self, make: Callable[[], T], names: Iterable[str] | None = None) -> None:
        self._make = make
        # None: every variable (settings read many; comparing them all costs microseconds).
        self._names = None if names is None else tuple(names)
        self._lock = threading.Lock()
        self._made: tuple[tuple[str | None, ...] | frozenset[tuple[str, str]], T] | None = None

    def _key(self) -> tuple[str | None, ...] | frozenset[tuple[str, str]]:
        if self._names is None:
            return frozenset(os.environ.items())
        return tuple(os.environ.get(name) for name in self._names)

    @property
    def made(self) -> bool:
        return self._made is not None

    def get(self) -> T:
        key = self._key()
        with self._lock:
            if self._made is None or self._made[0] != key:
                self._made = (key, self._make())
            return self._made[1]
