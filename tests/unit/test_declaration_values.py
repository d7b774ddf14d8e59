"""The declaration values the security scan cannot read, refused before it runs with one line naming
the template line; and the one written-out shape checkov cannot merge (a job's literal zones joined
where Globals joins a parameter) folded to its text."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.security.declaration_values import declaration_problems, fold_literal_joins
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT
from tests.jobs import jobs

TEMPLATE = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
FIRST = jobs()[0]


def _planted(tmp_path: Path, old: str, new: str) -> Path:
    assert old in TEMPLATE
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE.replace(old, new, 1), encoding="utf-8")
    return path


def test_the_template_has_no_value_the_scan_cannot_read() -> None:
    assert declaration_problems(PROJECT_ROOT / "template.yaml") == []


def test_an_intrinsic_in_a_jobs_declaration_is_one_line_naming_its_template_line(tmp_path: Path) -> None:
    block = f"  Jobs:\n    {FIRST.stem}:\n"
    path = _planted(tmp_path, block, block + "      GraceMinutes: !Ref LedgerRetentionDays\n")

    (problem,) = declaration_problems(path)

    line = TEMPLATE[: TEMPLATE.index(block)].count("\n") + 3
    assert problem.startswith(f"template.yaml:{line}: Mappings.Jobs.{FIRST.stem}.GraceMinutes is {{'Ref': ")
    assert "must be a literal string, number or list of strings" in problem
    assert "\n" not in problem


def test_a_default_value_the_scan_cannot_read_is_refused_and_a_parameters_ref_is_not(tmp_path: Path) -> None:
    default = "{DefaultValue: 135}"
    deeper = _planted(tmp_path, default, "{DefaultValue: !Select [0, !Ref OperatingTimeZones]}")
    line = TEMPLATE[: TEMPLATE.index(default)].count("\n") + 1

    (problem,) = declaration_problems(deeper)
    assert problem.startswith(f"template.yaml:{line}: DefaultValue: !Select [0, !Ref OperatingTimeZones")

    assert declaration_problems(_planted(tmp_path, default, "{DefaultValue: !Ref LedgerRetentionDays}")) == []
    assert declaration_problems(_planted(tmp_path, default, "{DefaultValue: !Ref NoSuchParameter}")) != []


def test_the_scan_refuses_before_checkov_runs(tmp_path: Path) -> None:
    block = f"  Jobs:\n    {FIRST.stem}:\n"
    path = _planted(tmp_path, block, block + "      GraceMinutes: !Ref LedgerRetentionDays\n")

    # (no checkov at that path: the declaration check comes first)
    result = CliRunner().invoke(app, ["security", "-t", str(path), "--checkov", str(tmp_path / "no-checkov")])

    assert result.exit_code == 2
    assert "Mappings.Jobs." in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_jobs_own_zones_are_written_as_text_for_the_scan(tmp_path: Path) -> None:
    block = f"  Jobs:\n    {FIRST.stem}:\n"
    path = _planted(tmp_path, block, block + "      OperatingTimeZones: [Europe/Berlin, Europe/Paris]\n")
    document = dict(Template.load(path).document)

    folded = fold_literal_joins(document)

    variables = folded["Resources"][FIRST.function_id]["Properties"]["Environment"]["Variables"]
    assert variables["OPERATING_TIME_ZONES"] == "Europe/Berlin,Europe/Paris"
    # Globals' join over the stack's parameter stays for CloudFormation
    assert folded["Globals"]["Function"]["Environment"]["Variables"]["OPERATING_TIME_ZONES"] == {
        "Fn::Join": [",", {"Ref": "OperatingTimeZones"}]
    }
