"""What a cold start imports: each function only what its route or job needs.

Timed by `make bench` (cold start rows); these tests pin the structure that keeps it low, in a
fresh interpreter so nothing this test process imported counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import clockless
from clockless_tools.local.runtime import LocalLambdaContext
from tests.conftest import PROJECT_ROOT, load_event


def modules_after_import(module: str) -> set[str]:
    paths = [str(PROJECT_ROOT / "layers/clockless"), str(PROJECT_ROOT / "functions/job_trigger")]
    code = f"import sys, json; sys.path[:0] = {paths!r}; import {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def test_the_trigger_imports_no_event_handler_and_no_idempotency_utility() -> None:
    loaded = modules_after_import("job_trigger.handler")

    assert "job_trigger.handler" in loaded
    assert not {m for m in loaded if m.startswith("aws_lambda_powertools.event_handler")}
    assert not {m for m in loaded if m.startswith("aws_lambda_powertools.utilities.idempotency")}


def test_the_kit_package_imports_its_parts_on_first_use() -> None:
    loaded = modules_after_import("clockless.tick")

    assert "clockless.job" not in loaded
    assert {name: getattr(clockless, name).__module__ for name in ("ScheduledJob", "Tick", "ConfigurationError")} == {
        "ScheduledJob": "clockless.job",
        "Tick": "clockless.tick",
        "ConfigurationError": "clockless.config",
    }
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = clockless.Nope


def test_a_request_on_another_route_is_404_before_any_dependency_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from job_trigger import handler

    built: list[Any] = []
    monkeypatch.setattr(handler, "dependencies", lambda: built.append(1))
    event = load_event("job_trigger/now.json")
    event["routeKey"] = "GET /jobs/{job}/ticks"

    response = handler.lambda_handler(event, LocalLambdaContext("trigger", 128, 10, "arn:aws:lambda:::function:t"))

    assert response["statusCode"] == 404
    assert "POST /jobs/{job}/ticks" in json.loads(response["body"])["error"]
    assert built == []
