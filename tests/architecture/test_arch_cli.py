"""`clockless arch`: the rules from the command line, as `make arch` users and CI see them."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from clockless_tools.cli.app import app
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
CLEANUP_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


def test_clockless_arch_exits_1_and_prints_rule_place_and_fix(planted: PlantedCopy) -> None:
    # Given a whole copy whose cleanup handler is not a job
    planted.with_tools()
    planted.replace(CLEANUP_HANDLER, "@job.handler\n", "")

    # When `clockless arch` checks it
    result = CliRunner().invoke(app, ["arch", "--template", str(planted.root / TEMPLATE)])

    # Then it fails naming the rule, the file, the resource and the fix
    assert result.exit_code == 1, result.output
    assert "scheduled-by-kit" in result.output
    assert f"{CLEANUP_HANDLER}:" in result.output
    assert f"{HOURLY_JOB.stem}Function" in result.output
    assert "fix:" in result.output
    assert "ok   layering" in result.output  # nothing but the plant: the tools are checked too


def test_clockless_arch_passes_on_the_project_and_rejects_an_unknown_rule() -> None:
    runner = CliRunner()

    passed = runner.invoke(app, ["arch", "--template", str(PROJECT_ROOT / TEMPLATE)])
    unknown = runner.invoke(app, ["arch", "--rule", "no-such-rule"])

    assert passed.exit_code == 0, passed.output
    assert "all rules hold" in passed.output
    assert unknown.exit_code == 2


def test_clockless_arch_names_an_unreadable_template_with_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["arch", "--template", str(tmp_path / "missing.yaml")])

    assert result.exit_code == 2
    assert "missing.yaml" in result.output


def test_clockless_arch_lists_a_packages_modules_as_markdown_and_refuses_what_is_not_one() -> None:
    runner = CliRunner()

    listed = runner.invoke(app, ["arch", "--modules", "clockless.fanout"])
    nothing = runner.invoke(app, ["arch", "--modules", "clockless.nothing"])
    mixed = runner.invoke(app, ["arch", "--modules", "clockless.fanout", "--list"])

    assert listed.exit_code == 0, listed.output
    rows = listed.stdout.splitlines()
    assert rows[0] == "| module | what it is | imports (of `clockless.fanout`) |"
    assert any(row.startswith("| `dispatcher` |") and "partition" in row for row in rows)
    assert nothing.exit_code == 2
    assert nothing.output.strip().splitlines() == [
        "error: --modules clockless.nothing: no modules under 'clockless.nothing'"
    ]
    assert mixed.exit_code == 2
    assert "--modules goes alone" in mixed.output


def test_clockless_arch_prints_each_functions_environment_size_and_goes_alone() -> None:
    runner = CliRunner()

    listed = runner.invoke(app, ["arch", "--environments"])
    mixed = runner.invoke(app, ["arch", "--environments", "--json"])

    assert listed.exit_code == 0, listed.output
    rows = listed.stdout.splitlines()
    assert rows[0].startswith("| function | bytes at its longest (a ")
    assert "| left of 4,096 |" in rows[0]
    assert any(row.startswith("| `JobTriggerFunction` |") and "JOB_FUNCTIONS" in row for row in rows)
    assert rows[-1].startswith("A job adds about ")
    assert mixed.exit_code == 2
    assert "--environments goes alone" in mixed.output
