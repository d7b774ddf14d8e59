"""The tools' errors share one root, `clockless_tools.errors.ToolError`, beside the kit's
`ClocklessError`: a command catches what a tool found with one `except`, and a tool error that
reports a kit error is both."""

from __future__ import annotations

import ast
import importlib
from typing import Final

from clockless import ClocklessError
from clockless_tools.errors import ToolError
from clockless_tools.template.model import ScheduleDefinitionError
from tests.conftest import PROJECT_ROOT

TOOLS: Final = PROJECT_ROOT / "tools"
# Not a tool's findings: the simulator raises them inside a delivery, standing for a failure the kit
# must survive (an error, a killed attempt), and no command may catch them as a reported error.
NOT_REPORTED: Final = frozenset(
    {"clockless_tools.simulate.faults.InjectedFault", "clockless_tools.simulate.faults.AttemptDied"}
)


def error_classes(source: str) -> list[str]:
    """The public classes a module defines whose bases name an error (`...Error`, `Exception`, a
    built-in error), found without importing it."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            names = [base.id if isinstance(base, ast.Name) else getattr(base, "attr", "") for base in node.bases]
            if any(name.endswith(("Error", "Exception", "Fault")) for name in names):
                found.append(node.name)
    return found


def test_every_error_a_tool_defines_has_the_tools_root() -> None:
    defined: list[type[BaseException]] = []
    for path in sorted((TOOLS / "clockless_tools").rglob("*.py")):
        names = error_classes(path.read_text(encoding="utf-8"))
        if names:
            module = importlib.import_module(".".join(path.relative_to(TOOLS).with_suffix("").parts))
            defined += [getattr(module, name) for name in names]
    qualified = {f"{error.__module__}.{error.__qualname__}": error for error in defined}

    assert len(qualified) > 20
    assert sorted(name for name, error in qualified.items() if not issubclass(error, ToolError)) == sorted(NOT_REPORTED)


def test_a_tool_error_that_reports_a_kit_error_is_both() -> None:
    assert issubclass(ScheduleDefinitionError, ToolError)
    assert issubclass(ScheduleDefinitionError, ClocklessError)
    assert not issubclass(ToolError, ClocklessError)


def test_a_planted_error_class_is_found() -> None:
    planted = (
        "class Fine:\n    pass\n\n\nclass LostError(RuntimeError):\n    pass\n\n\nclass _Own(ValueError):\n    pass\n"
    )

    assert error_classes(planted) == ["LostError"]
