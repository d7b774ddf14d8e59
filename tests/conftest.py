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
