"""Shared test setup. moto is imported before anything makes a boto3 client."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import moto  # noqa: F401  - first, so no client is created before moto can patch botocore
import pytest

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


@pytest.fixture(scope="session")
def template() -> Template:
    return Template.load(PROJECT_ROOT / "template.yaml")


def load_event(relative: str) -> dict[str, Any]:
    return json.loads((EVENTS / relative).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def modules_sharing_a_fixture(root: Path) -> frozenset[str]:
    """Test modules (as nodeid paths) that define a module-scoped fixture, e.g. a simulated run."""
    return frozenset(
        path.relative_to(root).as_posix()
        for path in (root / "tests").rglob("test_*.py")
        if 'scope="module"' in path.read_text(encoding="utf-8")
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test` runs `-n auto --dist loadgroup`. xdist's own loadgroup marks a group by editing
    each item's private `_nodeid`, which pytest 9 no longer reads, so every test is scheduled
    alone and each worker rebuilds the module fixtures (two bench runs, two simulations). This
    scheduler groups by what matters instead: a module with a module-scoped fixture is one unit
    (its fixture is built once, and as the largest units they start first); every other test is
    its own unit, spread over the workers."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    grouped = modules_sharing_a_fixture(config.rootpath)

    class ModuleFixtureScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in grouped else nodeid

    return ModuleFixtureScheduling(config, log)
