"""Every option that names where a command writes (--log, --dir, --output) is refused before the
command does anything when the path cannot be written: one line naming the option and the path,
exit 2, nothing written, and no folder created outside the project. (run-now and backfill, which
need a target, are tested in tests/integration/test_bad_paths.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.cli.common import writable
from tests.jobs import PROJECT_ROOT, jobs

JOB = jobs()[0]
# Nothing listens here: a command that got as far as its target would fail differently.
NOWHERE = "http://127.0.0.1:1"

# (the command, with {path} where the bad path goes; the option that names it)
INVOKE = ["invoke", JOB.function_id, "-e", str(PROJECT_ROOT / "events" / JOB.tick_sample), "--endpoint", NOWHERE]
WRITERS = [
    ([*INVOKE, "--log", "{path}"], "--log"),
    (["events", "--dir", "{path}"], "--dir"),
    (["bench", "run", "--output", "{path}"], "--output"),
    (["bench", "measure", "--output", "{path}"], "--output"),
]


def _bad_paths(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """(the path, what the error says about it)"""
    return {
        "under-a-file": (Path("/dev/null/x"), "/dev/null is not a folder"),
        "missing-folder-outside-the-project": (tmp_path / "missing" / "dir" / "x", "no folder"),
    }


@pytest.mark.parametrize(("command", "option"), WRITERS, ids=[" ".join(c[:2]) for c, _ in WRITERS])
@pytest.mark.parametrize("bad", ["under-a-file", "missing-folder-outside-the-project"])
def test_an_unwritable_path_is_one_line_that_changes_nothing(
    tmp_path: Path, command: list[str], option: str, bad: str
) -> None:
    path, why = _bad_paths(tmp_path)[bad]
    before = sorted(tmp_path.iterdir())

    result = CliRunner().invoke(app, [str(path) if arg == "{path}" else arg for arg in command])

    # Then one line names the option, the path and what is wrong with it
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {option} {path}: ")
    assert why in line
    # and nothing was done: no output, no folder created
    assert result.stdout == ""
    assert sorted(tmp_path.iterdir()) == before


def test_a_folder_named_where_a_file_goes_and_a_file_where_a_folder_goes_are_refused(tmp_path: Path) -> None:
    log = CliRunner().invoke(app, [*INVOKE, "--log", str(tmp_path)])
    (tmp_path / "file").write_text("", encoding="utf-8")
    events = CliRunner().invoke(app, ["events", "--dir", str(tmp_path / "file")])

    assert (log.exit_code, log.stderr.strip()) == (2, f"error: --log {tmp_path}: is a folder; name a file")
    assert (events.exit_code, events.stderr.strip()) == (
        2,
        f"error: --dir {tmp_path / 'file'}: not a folder; name a folder",
    )


def test_outside_the_project_the_file_or_folder_named_is_created_inside_it_its_folders_too(tmp_path: Path) -> None:
    # Outside the project: the named file (or folder) in an existing folder is fine
    assert writable(tmp_path / "x.log", "--log") == tmp_path / "x.log"
    assert writable(tmp_path / "events", "--dir", folder=True) == tmp_path / "events"
    # Inside it, the folders a write needs are created (the default .clockless/ on a fresh clone)
    inside = PROJECT_ROOT / ".clockless" / "not-yet" / "x.log"
    assert writable(inside, "--log") == inside
    assert not inside.parent.exists()  # checking creates nothing


def test_events_written_to_a_new_folder_outside_the_project(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["events", "--dir", str(tmp_path / "events")])

    assert result.exit_code == 0, result.output
    assert (tmp_path / "events" / JOB.tick_sample).is_file()
