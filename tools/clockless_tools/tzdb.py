"""One time-zone database for the tools and the tests: the pinned `tzdata` package.

The layer ships `tzdata` and the python3.13 Lambda runtime has no system database, so that is
what the functions use. `zoneinfo` reads the system's database (/usr/share/zoneinfo) before
`tzdata` wherever one exists, so without this a developer's `clockless schedules check` and the
tests would judge schedules with whatever release the machine has. Importing `clockless_tools`
calls `use_pinned_tzdata`, and the Makefile exports an empty PYTHONTZPATH for everything it runs.
"""

from __future__ import annotations

import os
import zoneinfo


def use_pinned_tzdata() -> str:
    """Make zoneinfo read only the `tzdata` package, here and in every subprocess started after;
    return the IANA release it holds (e.g. "2026f")."""
    # Empty means "no search path": zoneinfo falls back to the tzdata package alone.
    os.environ["PYTHONTZPATH"] = ""
    if zoneinfo.TZPATH:
        zoneinfo.reset_tzpath(to=[])
        zoneinfo.ZoneInfo.clear_cache()
    return database_version()


def database_version() -> str:
    """The IANA release of the pinned `tzdata` package."""
    import tzdata

    return str(tzdata.IANA_VERSION)
