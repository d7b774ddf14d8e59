"""The kit's errors share one root, `ClocklessError`, with a one-line message each: a caller catches
them all with one `except`, and still with the built-in base each always had."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import clockless
from clockless import ClocklessError, ConfigurationError, MalformedTickError, Tick
from clockless.config import env_int
from clockless.fanout.queue import QueueSendError


def _kit_errors() -> list[type[BaseException]]:
    """Every exception class a module of the kit defines (imported to be seen as Python sees it)."""
    found: list[type[BaseException]] = []
    for module in pkgutil.walk_packages(clockless.__path__, "clockless."):
        loaded = importlib.import_module(module.name)
        found += [
            value
            for _, value in inspect.getmembers(loaded, inspect.isclass)
            if issubclass(value, BaseException) and value.__module__ == module.name
        ]
    return found


def test_every_error_the_kit_defines_has_the_one_root() -> None:
    errors = _kit_errors()

    assert len(errors) >= 9  # the walk reaches the fan-out kit's errors too
    assert [error.__qualname__ for error in errors if not issubclass(error, ClocklessError)] == []


def test_bad_input_is_caught_by_the_root_and_by_its_builtin_base() -> None:
    # Given a payload that cannot be a tick of this job
    event = {"job": "other-job"}

    # When it is read, Then the one `except ClocklessError` catches it, as `except ValueError` always did
    with pytest.raises(ClocklessError) as caught:
        Tick.from_event(event, expected_job="session-cleanup")
    assert isinstance(caught.value, MalformedTickError | ValueError)
    with pytest.raises(ValueError, match="malformed tick"):
        Tick.from_event(event, expected_job="session-cleanup")


def test_a_message_quoting_several_lines_is_one_line() -> None:
    # Given a reason SQS gave over two lines, quoted in the kit's error
    error = QueueSendError("SQS refused 1 message(s) for queue-url: InvalidMessageContents\n  body  too long")

    # Then the error reads as one line, the spaces of each line kept
    assert str(error) == "SQS refused 1 message(s) for queue-url: InvalidMessageContents body  too long"


def test_a_one_line_message_is_kept_as_it_is() -> None:
    with pytest.raises(ConfigurationError) as caught:
        env_int("PARTITIONS", {"PARTITIONS": "12  twelve"})

    assert str(caught.value) == "environment variable PARTITIONS must be an integer, got '12  twelve'"
