"""`clockless security` runs the real checkov (from .venv-checkov, which `make security` and so
`make test` install first) and fails on a finding the skip list does not explain: planted here.
checkov is a subprocess, so this process opens no socket: a unit test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.security.scan import CHECKOV
from clockless_tools.template.loader import DEFAULT_TEMPLATE

pytestmark = [
    pytest.mark.skipif(
        not CHECKOV.exists() and os.environ.get("CLOCKLESS_REQUIRE_CHECKOV") != "1",
        reason="needs checkov in .venv-checkov (`make security` installs it)",
    ),
    # A second checkov run (9 s of CPU) after `make test`'s own scan of the template: CI's share.
    pytest.mark.slow,
]

PLANT = """Resources:
  PlantedTopic:
    Type: AWS::SNS::Topic
    Properties:
      DisplayName: planted, not encrypted
"""


def test_an_unexplained_finding_planted_in_the_template_fails_the_scan(tmp_path: Path) -> None:
    text = DEFAULT_TEMPLATE.read_text(encoding="utf-8")
    assert "\nResources:\n" in text
    planted = tmp_path / "template.yaml"
    planted.write_text(text.replace("\nResources:\n", "\n" + PLANT, 1), encoding="utf-8")

    result = CliRunner().invoke(app, ["security", "--template", str(planted)])

    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    # Only the plant: every finding of the real template stays explained.
    assert [line for line in lines if line.startswith(("unexplained:", "stale"))] == [
        "unexplained: CKV_AWS_26 AWS::SNS::Topic PlantedTopic: Ensure all data stored in the SNS topic is encrypted"
    ]
    assert lines[-1] == "fix the template, or add an entry with its reason to checkov-skips.yaml"
