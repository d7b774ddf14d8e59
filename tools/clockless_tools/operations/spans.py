"""Spans of time as an operator reads them: `50 d`, `3 h`, `90 min`, `1 d 6 h`."""

from __future__ import annotations

from datetime import timedelta

_UNITS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


def format_span(span: timedelta) -> str:
    """The two largest non-zero units, e.g. `50 d`, `1 d 6 h`, `3 h`, `45 s` (`0 s` for none)."""
    seconds = round(span.total_seconds())
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    parts = []
    for unit, size in _UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}")
    return sign + (" ".join(parts[:2]) if parts else "0 s")
