"""Reading the environment the template (and Lambda) sets, with errors that name the variable.

The one module of the kit that reads the process environment: the settings objects (the kit's,
the fan-out's, each function's) read it through these functions, each variable the kit shares
(`LEDGER_*`, `POWERTOOLS_METRICS_NAMESPACE`) is parsed here once, and the rule `layering` refuses
an environment read anywhere else in deployed code. Each function takes `environ` for tests; None
is the process's environment."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Final

from clockless.errors import ClocklessError
from clockless.schedule.local_clock import NO_LOCAL_TIME, LocalClock, LocalClockError


class ConfigurationError(ClocklessError, RuntimeError):
    """The function's environment does not match what template.yaml declares."""


# Where the kit's metrics go when the template sets no POWERTOOLS_METRICS_NAMESPACE.
DEFAULT_METRICS_NAMESPACE: Final = "Clockless"
_DAY_SECONDS: Final = 86400


def environment(environ: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """`environ`, or the process's environment when None."""
    return os.environ if environ is None else environ


def env_optional(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A variable that may be unset: its value (stripped), or None when unset or blank."""
    return environment(environ).get(name, "").strip() or None


def env_str(name: str, environ: Mapping[str, str] | None = None) -> str:
    value = environment(environ).get(name, "").strip()
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


def metrics_namespace(environ: Mapping[str, str] | None = None) -> str:
    """The CloudWatch namespace of the kit's metrics: POWERTOOLS_METRICS_NAMESPACE, as Powertools
    reads it, or Clockless."""
    return env_optional("POWERTOOLS_METRICS_NAMESPACE", environ) or DEFAULT_METRICS_NAMESPACE


def ledger_table_name(environ: Mapping[str, str] | None = None) -> str:
    """LEDGER_TABLE_NAME: the run ledger every job, worker and the trigger write to."""
    return env_str("LEDGER_TABLE_NAME", environ)


def ledger_retention_seconds(environ: Mapping[str, str] | None = None) -> int:
    """LEDGER_RETENTION_DAYS (at least 1), in seconds: how long a ledger entry is kept."""
    return env_int("LEDGER_RETENTION_DAYS", environ, minimum=1) * _DAY_SECONDS


def local_clock(environ: Mapping[str, str] | None = None) -> LocalClock | None:
    """LOCAL_TIME in OPERATING_TIME_ZONES (its declaration's LocalTime, in the zones it serves): the
    local time a job's ticks keep; None when LOCAL_TIME is unset or `none`."""
    text = env_optional("LOCAL_TIME", environ)
    if text is None or text == NO_LOCAL_TIME:
        return None
    try:
        return LocalClock.parse(
            text, env_list("OPERATING_TIME_ZONES", environ), where="environment variable LOCAL_TIME"
        )
    except LocalClockError as error:
        raise ConfigurationError(str(error)) from None


def local_tick_grace(environ: Mapping[str, str] | None = None, *, longest: timedelta) -> timedelta:
    """LOCAL_TICK_GRACE_MINUTES (the job's GraceMinutes): how long after its scheduled time a local
    tick may still succeed, at least 1 minute and at most `longest` (clockless.local_ticks)."""
    grace = timedelta(minutes=env_int("LOCAL_TICK_GRACE_MINUTES", environ, minimum=1))
    if grace > longest:
        raise ConfigurationError(
            f"environment variable LOCAL_TICK_GRACE_MINUTES must be at most {int(longest.total_seconds()) // 60}, "
            f"got {int(grace.total_seconds()) // 60}"
        )
    return grace


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
