"""The kit's errors share one root, `ClocklessError`, with a one-line message each: a caller catches
them all with one `except`, and still with the built-in base each always had. The HTTP trigger's
errors (functions/job_trigger) have the same root."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from types import ModuleType
from typing import Final

import pytest

import clockless
import job_trigger
from clockless import ClocklessError, ConfigurationError, MalformedTickError, Tick
from clockless.config import env_int
from clockless.fanout.queue import QueueSendError
from tests.conftest import PROJECT_ROOT

# Raised by name, they would bypass the root: the kit raises a `ClocklessError` subclass instead.
BUILT_INS: Final = frozenset(
    {"Exception", "ValueError", "RuntimeError", "TypeError", "KeyError", "LookupError", "IndexError", "OSError"}
)
# The kit's code and the trigger's, where no error is raised by a built-in's name.
RAISING_CODE: Final = (PROJECT_ROOT / "layers/clockless/clockless", PROJECT_ROOT / "functions/job_trigger/job_trigger")


def _kit_errors(package: ModuleType = clockless) -> list[type[BaseException]]:
    """Every exception class a module of the package defines (imported to be seen as Python sees it)."""
    found: list[type[BaseException]] = []
    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
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


def test_every_error_the_trigger_defines_has_the_kits_root() -> None:
    errors = _kit_errors(job_trigger)

    assert {"TriggerRejected", "JobInvokeError", "TriggerSecretError"} <= {error.__qualname__ for error in errors}
    assert [error.__qualname__ for error in errors if not issubclass(error, ClocklessError)] == []


def bare_raises(source: str) -> list[str]:
    """Each `raise` of a built-in error by name (`raise ValueError(...)`), as `line N: raise Name`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id in BUILT_INS:
                found.append((node.lineno, raised.id))
    return [f"line {line}: raise {name}" for line, name in sorted(found)]


def test_the_kit_and_the_trigger_raise_no_built_in_error_by_name() -> None:
    files = [path for root in RAISING_CODE for path in sorted(root.rglob("*.py"))]
    found = {
        str(path.relative_to(PROJECT_ROOT)): raises
        for path in files
        if (raises := bare_raises(path.read_text(encoding="utf-8")))
    }

    assert len(files) > 40
    assert found == {}, (
        "raise a ClocklessError subclass (clockless.errors has DeclarationError, ArgumentError, StateError)"
    )


def test_a_planted_built_in_raise_is_found() -> None:
    planted = "def f(x):\n    if x:\n        raise ValueError(x)\n    raise RuntimeError\n    raise StateError(x)\n"

    assert bare_raises(planted) == ["line 3: raise ValueError", "line 4: raise RuntimeError"]


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
