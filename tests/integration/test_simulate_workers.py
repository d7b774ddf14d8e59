"""`clockless simulate` drains SQS event source mappings in simulated time: a fixture's workers meet
crashes, duplicates, lost answers and throttling, and the run is judged item by item against the
reference replay (which delivers each tick once and drains without faults)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from tests.conftest import PROJECT_ROOT

FIXTURE = PROJECT_ROOT / "tests" / "fixtures" / "sqs_worker"
WINDOW = ("--from", "2026-11-27T00:00:00Z", "--to", "2026-11-27T04:00:00Z", "--seed", "3")


def simulate(template: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["simulate", "--json", "--template", str(template), *WINDOW])
    assert result.stdout.strip(), f"no report (exit {result.exit_code}): {result.stderr}"
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture(scope="module")
def idempotent_workers() -> tuple[int, dict[str, Any]]:
    return simulate(FIXTURE / "fanout.yaml")


def test_workers_that_crash_and_get_messages_twice_still_take_effect_once_per_item(
    idempotent_workers: tuple[int, dict[str, Any]],
) -> None:
    code, report = idempotent_workers

    (producer,) = report["jobs"]
    workers = producer["workers"]
    assert code == 0
    assert report["ok"] is True
    assert (
        producer["effects"]
        == producer["reference_effects"]
        == {"ItemsTable": {"created": 12, "updated": 0, "deleted": 0}}
    )
    # The showcase tick's messages each met a fault on their first receive, and came back.
    assert workers["faults"]["crash"] > 0
    assert workers["redelivered"] >= workers["faults"]["crash"]
    assert workers["failed"] >= workers["faults"]["crash"]
    assert workers["messages"] == workers["invocations"]  # BatchSize 1
    assert workers["dead_lettered"] == 0
    assert workers["ledger_differences"] == []


def test_a_worker_whose_write_is_not_idempotent_fails_the_run(tmp_path: Path) -> None:
    counting = tmp_path / "template.yaml"
    text = (FIXTURE / "fanout.yaml").read_text(encoding="utf-8")
    counting.write_text(text.replace('Default: "false"', 'Default: "true"'), encoding="utf-8")
    (tmp_path / "src").symlink_to(FIXTURE / "src")

    code, report = simulate(counting)

    (producer,) = report["jobs"]
    assert code == 1
    assert report["ok"] is False
    assert producer["exactly_once"] is False
    # Items delivered more than once were counted more than once: named, item by item.
    changed = [d for d in producer["differences"] if d["kind"] == "changed"]
    assert changed
    assert all(set(d["attributes"]) == {"deliveries"} for d in changed)
