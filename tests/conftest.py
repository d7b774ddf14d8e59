"""Shared test setup. moto is imported before anything makes a boto3 client."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import moto  # noqa: F401  - first, so no client is created before moto can patch botocore
import pytest

from clockless_tools.local.data_loader import share_data_loader
from clockless_tools.template.model import Template

PROJECT_ROOT = Path(__file__).resolve().parents[1]
EVENTS = PROJECT_ROOT / "events"

# No test may sign a request with a developer's real credentials or reach a real region.
for _name, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_METRICS_NAMESPACE": "ClocklessTest",
}.items():
    os.environ[_name] = _value
os.environ.pop("AWS_PROFILE", None)

share_data_loader()


@pytest.fixture(scope="session")
def template() -> Template:
    return Template.load(PROJECT_ROOT / "template.yaml")


def load_event(relative: str) -> dict[str, Any]:
    return json.loads((EVENTS / relative).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def fixture_groups(root: Path) -> dict[str, str]:
    """ "<module path>::<test function>" -> its group, for every test function that takes a
    module-scoped fixture of its own module (read from the source: the xdist controller collects
    nothing). Tests taking the same such fixtures form one group."""
    groups: dict[str, str] = {}
    for path in sorted((root / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if 'scope="module"' not in text:
            continue
        module = path.relative_to(root).as_posix()
        functions = [node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
        shared = {node.name for node in functions if any(map(_is_module_fixture, node.decorator_list))}
        for node in functions:
            used = sorted(shared & {argument.arg for argument in node.args.args})
            if node.name.startswith("test") and used:
                groups[f"{module}::{node.name}"] = f"{module}::{'+'.join(used)}"
    return groups


def _is_module_fixture(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Call) and any(
        keyword.arg == "scope" and isinstance(keyword.value, ast.Constant) and keyword.value.value == "module"
        for keyword in decorator.keywords
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test` runs `-n auto --dist loadgroup`. xdist's own loadgroup marks a group by editing
    each item's private `_nodeid`, which pytest 9 no longer reads, so every test was scheduled
    alone and each worker rebuilt the module fixtures (two bench runs, two simulations). This
    scheduler groups by what matters instead: the tests taking the same module-scoped fixture are
    one unit, so it is built once (and, as the largest units, they start first); every other test
    is its own unit, spread over the workers."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    groups = fixture_groups(config.rootpath)

    class FixtureGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return groups.get(nodeid.split("[", 1)[0], nodeid)

    return FixtureGroupScheduling(config, log)
