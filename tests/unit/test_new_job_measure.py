"""`clockless new measure`: what `clockless new job` adds to template.yaml, measured in a scratch
copy (docs/adding-a-job.md and docs/decisions.md show it as generated blocks, which
tests/unit/test_docs.py holds current). The measuring is tested here, not the sentences' numbers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.scaffold.measure import (
    HAND_WRITTEN_LINES,
    FannedOutJob,
    JobsWithoutFanOut,
    Numstat,
    fanned_out_sentence,
    measure_fanned_out,
    measure_without_fan_out,
    without_fan_out_sentence,
)
from clockless_tools.scaffold.new_job import new_job
from tests.conftest import PROJECT_ROOT

BEFORE = "a\nb\nc\nd\n"
AFTER = "a\nB\nc\nd\ne\nf\n"


def test_lines_are_counted_as_git_diff_numstat_counts_them(tmp_path: Path) -> None:
    # Given two versions of a file: one line changed, two added
    (tmp_path / "before").write_text(BEFORE, encoding="utf-8")
    (tmp_path / "after").write_text(AFTER, encoding="utf-8")

    # When git counts them and the measurement does
    done = subprocess.run(
        ["git", "diff", "--no-index", "--numstat", "before", "after"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    lines_in, lines_out, _ = done.stdout.split("\t")

    # Then they agree
    assert Numstat.of(BEFORE, AFTER) == Numstat(int(lines_in), int(lines_out)) == Numstat(3, 1)
    assert Numstat.of(BEFORE, AFTER).new == 2


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The files `clockless new job` edits, and the project's package folders."""
    root = tmp_path / "project"
    for relative in ("template.yaml", "pyproject.toml", "events/env.local.json"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_ROOT / relative, root / relative)
    for package in (PROJECT_ROOT / "functions").iterdir():
        if package.is_dir():
            (root / "functions" / package.name).mkdir(parents=True)
    return root


def test_measuring_makes_a_job_in_a_scratch_copy_and_leaves_the_project_alone(project: Path) -> None:
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}

    job = measure_fanned_out(project)

    # Then a job was made and measured: its table and tables policy among what it added
    assert job.diff.lines_in > job.table_lines + job.policy_lines > 0
    # And the project is as it was
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    assert {p.name for p in (project / "functions").iterdir()} == {
        p.name for p in (PROJECT_ROOT / "functions").iterdir() if p.is_dir()
    }


def test_a_name_the_project_has_taken_is_not_measured(project: Path) -> None:
    # Given a project that has a job named like the first name the measurement would take
    (project / "functions" / "subscription_expiry").mkdir()

    # Then the measurement makes a job under another name, one the project has not taken either
    # (a project with jobs of its own may have taken the next candidates too)
    name = measure_fanned_out(project).name
    assert name != "subscription-expiry"
    assert not (project / "functions" / name.replace("-", "_")).exists()


def test_the_sentences_state_what_was_measured() -> None:
    fanned = FannedOutJob("subscription-expiry", Numstat(51, 3), table_lines=22, policy_lines=11)
    plain = JobsWithoutFanOut(first=Numstat(257, 1), second=Numstat(51, 3), loop_lines=208)
    more = JobsWithoutFanOut(first=None, second=Numstat(51, 3), loop_lines=208, existing=2)

    assert fanned_out_sentence(fanned) == (
        "For `subscription-expiry --fan-out` (daily, the loop's defaults; a `--schedule` adds a line per key it "
        "derives), `clockless new job` adds 48 new lines to `template.yaml` and "
        "changes 3 (`git diff --numstat template.yaml`: 51 in, 3 out), 22 of them the table and 11 its tables "
        f"policy; a job written out by hand took {HAND_WRITTEN_LINES}.\n"
    )
    assert without_fan_out_sentence(plain) == (
        "Of the jobs without fan-out that `clockless new job` makes in a copy of the project, the first adds "
        "256 new lines and changes 1 (`git diff --numstat`: 257 in, 1 out), 208 of them the two loops such jobs "
        "share; a second 48 new lines and 3 changed.\n"
    )
    assert without_fan_out_sentence(more) == (
        "This project has 2 jobs without fan-out, so the two loops such jobs share are in `template.yaml` (208 "
        "lines, which the first brought in); another that `clockless new job` makes in a copy of the project adds "
        "48 new lines and changes 3 (`git diff --numstat`: 51 in, 3 out).\n"
    )


def test_the_figures_for_jobs_without_fan_out_are_what_the_next_one_adds_to_the_template(project: Path) -> None:
    # Given what the project is told now: with no such job, the first's lines (the loops among them) and
    # a second's; with some (a user's project), their count, the loops' lines and another's
    before = measure_without_fan_out(project)
    if before.first is not None:
        assert before.existing == 0
        # The first differs from a second by exactly the loops it brings in
        assert before.first.new - before.second.new == before.loop_lines > 0

    # When the project makes its next job without fan-out (at a schedule of its own)
    template = project / "template.yaml"
    text = template.read_text(encoding="utf-8")
    new_job(project, "probe-plain-job", fan_out=False, schedule="cron(30 13 * * ? *)")
    made = Numstat.of(text, template.read_text(encoding="utf-8"))

    # Then it added what the sentence said it would
    assert made == (before.first or before.second)
    # And measured again, the sentence speaks of no first: the loops are counted in the template as
    # written, and another job adds what a second did
    after = measure_without_fan_out(project)
    expected = (None, before.existing + 1, before.loop_lines, before.second)
    assert (after.first, after.existing, after.loop_lines, after.second) == expected
    assert f"This project has {before.existing + 1} job" in without_fan_out_sentence(after)


def test_measuring_a_folder_without_a_template_says_so(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["new", "measure", "--project", str(tmp_path)])

    assert done.exit_code == 2
    assert done.stderr == f"error: {tmp_path} has no template.yaml: pass the project's root with --project\n"
