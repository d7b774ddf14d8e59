"""The tools and the tests use one time-zone database, the pinned tzdata the layer ships."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import subprocess
import sys
import zoneinfo
from datetime import UTC, datetime, timedelta

from clockless_tools.tzdb import database_version
from tests.architecture.test_dependencies import LAYER_REQUIREMENTS, requirement_pins

# The IANA release inside the tzdata version the layer pins: a bump of one needs the other.
PINNED = {"2026.6": "2026f"}


def test_the_database_in_use_is_the_pinned_release() -> None:
    layer_version = requirement_pins(LAYER_REQUIREMENTS)["tzdata"].version

    assert importlib.metadata.version("tzdata") == layer_version
    assert database_version() == PINNED[layer_version], f"tzdata {layer_version}: add its IANA release to PINNED"


def test_zoneinfo_reads_no_system_database_here_or_in_subprocesses() -> None:
    assert zoneinfo.TZPATH == ()
    child = subprocess.run(
        [sys.executable, "-c", "import zoneinfo; print(zoneinfo.TZPATH)"], capture_output=True, text=True, check=True
    )
    assert child.stdout.strip() == "()"


def test_a_zone_is_the_tzdata_packages_file_transition_for_transition() -> None:
    key = "America/New_York"
    with importlib.resources.files("tzdata.zoneinfo").joinpath(key).open("rb") as packaged:
        from_package = zoneinfo.ZoneInfo.from_file(packaged, key=key)
    in_use = zoneinfo.ZoneInfo.no_cache(key)

    instants = [datetime(1970, 1, 1, tzinfo=UTC) + timedelta(hours=7 * i) for i in range(0, 70 * 1252)]
    assert all(i.astimezone(in_use).utcoffset() == i.astimezone(from_package).utcoffset() for i in instants)
    assert set(zoneinfo.available_timezones()) == set(
        importlib.resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    )


def test_schedules_check_names_the_database_it_checks_with() -> None:
    from typer.testing import CliRunner

    from clockless_tools.cli.app import app

    result = CliRunner().invoke(app, ["schedules", "check", "--from", "2027-01-01"])

    assert f"time zones: IANA {PINNED['2026.6']}, the pinned tzdata package the layer ships" in result.stdout
