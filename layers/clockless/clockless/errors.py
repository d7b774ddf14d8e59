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
