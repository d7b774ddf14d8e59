"""`clockless engine measure` and `timings` without an engine: what the table says of a measured
document, the one-line errors for a function that is not scheduled and a figures file that is
missing, and whether binfmt_misc's entry is read as emulation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.engine import emulation
from clockless_tools.engine.invoke_seconds import markdown_table

DOCUMENT: dict[str, Any] = {
    "measured_at": "2026-12-06T23:00:00Z",
    "commit": "abc1234",
    "cores": 2,
    "architecture": "x86_64",
    "engine": "the project's dockerd",
    "image": "clockless/lambda-python3.13:32f334a878d0-x86_64",
    "function": "SessionCleanupFunction",
    "event": "events/session_cleanup/retry.json",
    "cold_seconds": {"median": 7.5, "min": 7.25, "max": 9.0, "runs": [7.25, 7.5, 9.0]},
    "warm_seconds": {"median": 0.12, "min": 0.1, "max": 0.2, "runs": [0.1, 0.12, 0.2]},
    "load_before": 1.5,
    "load_after": 2.25,
}


def test_the_table_gives_medians_ranges_runs_and_the_load_they_were_measured_under() -> None:
    table = markdown_table(DOCUMENT)

    assert "| cold: `sam local invoke`, a new container | 7.50 s | 7.25 to 9.00 s | 3 |" in table
    assert "| warm: `start-lambda --warm-containers EAGER`, boto3 | 0.12 s | 0.10 to 0.20 s | 3 |" in table
    assert "load average 1.5 before and 2.25 after" in table
    assert "`SessionCleanupFunction` with `events/session_cleanup/retry.json`" in table


def test_timings_prints_the_table_of_the_figures_file(tmp_path: Path) -> None:
    measured = tmp_path / "sam-local.json"
    measured.write_text(json.dumps(DOCUMENT), encoding="utf-8")

    result = CliRunner().invoke(app, ["engine", "timings", "--measured", str(measured)])

    assert result.exit_code == 0, result.output
    assert result.output.strip() == markdown_table(DOCUMENT)


def test_timings_without_the_figures_file_is_one_line_naming_the_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["engine", "timings", "--measured", str(tmp_path / "none.json")])

    assert result.exit_code != 0
    assert "run `clockless engine measure`" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_measure_refuses_a_function_that_is_not_scheduled_before_touching_any_engine(tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["engine", "measure", "--function", "JobTriggerFunction", "-o", str(output)])

    assert result.exit_code != 0
    assert "--function JobTriggerFunction: not a scheduled function of template.yaml" in result.output
    assert not output.exists()


@pytest.mark.parametrize(
    ("entry", "expected"), [("enabled\ninterpreter /x\n", True), ("disabled\n", False), (None, False)]
)
def test_emulation_is_read_from_the_binfmt_misc_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str | None, expected: bool
) -> None:
    monkeypatch.setattr(emulation, "BINFMT", tmp_path)
    if entry is not None:
        (tmp_path / "qemu-aarch64").write_text(entry, encoding="utf-8")

    assert emulation.emulated("arm64") is expected
