from __future__ import annotations

import pytest

from clockless import ConfigurationError, KitSettings
from session_cleanup.settings import SessionCleanupSettings
from window_generation.settings import WindowGenerationSettings


def test_missing_variable_is_named() -> None:
    with pytest.raises(ConfigurationError, match="IDEMPOTENCY_TABLE_NAME is not set"):
        KitSettings.from_env({"IDEMPOTENCY_EXPIRY_SECONDS": "3600"})


def test_non_integer_is_refused_with_its_value() -> None:
    with pytest.raises(ConfigurationError, match="EMPTY_SESSION_GRACE_MINUTES must be an integer, got 'two hours'"):
        SessionCleanupSettings.from_env({"SESSIONS_TABLE_NAME": "s", "EMPTY_SESSION_GRACE_MINUTES": "two hours"})


def test_expiry_below_a_minute_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=">= 60"):
        KitSettings.from_env({"IDEMPOTENCY_TABLE_NAME": "t", "IDEMPOTENCY_EXPIRY_SECONDS": "5"})


def test_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="Mars/Olympus_Mons"):
        WindowGenerationSettings.from_env(
            {"PROGRAMS_TABLE_NAME": "p", "WINDOWS_TABLE_NAME": "w", "OPERATING_TIME_ZONES": "UTC,Mars/Olympus_Mons"}
        )


def test_zones_are_a_comma_separated_list() -> None:
    settings = WindowGenerationSettings.from_env(
        {
            "PROGRAMS_TABLE_NAME": "p",
            "WINDOWS_TABLE_NAME": "w",
            "OPERATING_TIME_ZONES": "America/New_York, Pacific/Honolulu",
        }
    )
    assert settings.operating_time_zones == ("America/New_York", "Pacific/Honolulu")
