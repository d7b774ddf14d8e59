"""The root of the kit's errors, so a caller can catch every one of them with one `except`."""

from __future__ import annotations

import re

_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


class ClocklessError(Exception):
    """Every error the kit raises on purpose. Its message is one line (a line break in what it
    quotes, a service's reason or a traceback, read as one space), as a log line, a ledger entry
    and a DLQ record show it.

    Each subclass also keeps the built-in base it always had (`ValueError` for bad input,
    `RuntimeError` for a state the caller must react to), so existing handlers still catch it.
    """

    def __str__(self) -> str:
        return _LINE_BREAKS.sub(" ", super().__str__()).strip()


class DeclarationError(ClocklessError, ValueError):
    """A job's declaration (`ScheduledJob`, `FanOut`, its pacing, its keys' layout) asks for what
    the kit cannot do. Raised as the job's module is imported, before any tick is taken."""


class ArgumentError(ClocklessError, ValueError):
    """A value handed to the kit while a tick runs is not one it takes (a time without a zone,
    `FanOut.start` params that are not JSON, a key not in the kit's layout)."""


class StateError(ClocklessError, RuntimeError):
    """What the kit read is not a state its own writes make (a record written outside the kit):
    the delivery fails loudly, so Lambda's retries and the dead-letter queue see it."""
