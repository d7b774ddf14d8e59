"""Deployed code reads the process environment in `clockless.config` only: ruff's banned-api
(TID251, pyproject.toml) refuses `os.environ`, `os.environb`, `os.getenv` and `os.getenvb` in
layers/ and functions/ but there. Planted reads, each caught at its line; the config module, the
tools and the tests may read it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.jobs import HOUR, job_where

RUFF = Path(sys.executable).with_name("ruff")
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"
LOGIC = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/logic.py"
KIT_LEDGER = "layers/clockless/clockless/ledger.py"
KIT_CONFIG = "layers/clockless/clockless/config.py"
TOOL = "tools/clockless_tools/local/server.py"


def environment_reads(relative: str, appended: str) -> list[int]:
    """The lines ruff refuses as environment reads in the project's file with `appended` at its end,
    checked under the file's own path (so pyproject.toml's per-file settings apply)."""
    source = (PROJECT_ROOT / relative).read_text(encoding="utf-8") + appended
    checked = subprocess.run(
        [
            str(RUFF),
            "check",
            "--no-cache",
            "--select",
            "TID251",
            "--output-format",
            "json",
            "--stdin-filename",
            relative,
            "-",
        ],
        input=source,
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert checked.returncode in (0, 1), checked.stderr
    return sorted(finding["location"]["row"] for finding in json.loads(checked.stdout))


@pytest.mark.parametrize(
    ("relative", "code"),
    [
        (KIT_LEDGER, "\nimport os  # noqa: E402\n\nRETENTION = os.environ.get('LEDGER_RETENTION_DAYS', '30')\n"),
        (HANDLER, "\nfrom os import getenv  # noqa: E402\n"),
        (LOGIC, "\nimport os  # noqa: E402\n\nTABLE = os.environ['SESSIONS_TABLE_NAME']\n"),
        (LOGIC, "\nfrom os import environ  # noqa: E402\n"),
    ],
    ids=["kit-module", "function-handler", "job-logic", "from-os-import-environ"],
)
def test_reading_the_environment_outside_the_config_module_is_caught(relative: str, code: str) -> None:
    before = len((PROJECT_ROOT / relative).read_text(encoding="utf-8").splitlines())

    found = environment_reads(relative, code)

    assert found == [before + len(code.splitlines())]


def test_the_project_reads_the_environment_only_where_it_may() -> None:
    assert environment_reads(KIT_LEDGER, "") == []
    # the config module reads it; so may the tools, which run on a developer's machine
    assert (
        environment_reads(KIT_CONFIG, "\n\ndef region() -> str | None:\n    return os.environ.get('AWS_REGION')\n")
        == []
    )
    assert environment_reads(TOOL, "\nimport os  # noqa: E402\n\nHOME = os.environ['HOME']\n") == []
