"""Whether a name is an IANA time zone the layer's zone database knows (the pinned tzdata package)."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def is_iana_zone(name: str) -> bool:
    """True for a zone ZoneInfo can load; False for an unknown name or one that is not a key at all
    (a path, an empty string: ZoneInfo raises ValueError for those)."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True
