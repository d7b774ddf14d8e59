"""The jobs `clockless new job` writes, run by SAM CLI: in a copy of the project, a plain job and a
fanned-out one are made by the command and their samples written by `clockless events`, as the
command says to; then `sam build` of the copy, and every sample of each through `sam local invoke`
(the fanned-out one's worker through `sam local invoke` and `start-lambda`) on an embedded stack of
the copy, judged against `clockless invoke` of the same events on a second one, as the project's
own jobs are (tests/containers/test_sam_local_invoke.py).

Slow and in containers: `make test-containers` (CI runs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from clockless_tools.template.model import Template
from tests.containers.harness import (
    Built,
    SamLocal,
    Stack,
    build,
    copy_environment,
    every_sample_does_what_clockless_invoke_does,
    project_copy,
)
from tests.jobs import jobs

pytestmark = [pytest.mark.slow, pytest.mark.containers]

# The job's name and what `clockless new job` is given: one without fan-out, one with.
NEW_JOBS: Final = {"nightly-digest": (), "subscription-expiry": ("--fan-out",)}


@pytest.fixture(scope="module")
def project_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project with the two jobs made by the command and their samples written."""
    root = project_copy(tmp_path_factory.mktemp("new-jobs") / "project")
    cli = [sys.executable, "-m", "clockless_tools.cli"]
    made = [[*cli, "new", "job", name, *options, "--project", str(root)] for name, options in NEW_JOBS.items()]
    for command in [*made, [*cli, "events", "-t", str(root / "template.yaml")]]:
        done = subprocess.run(
            command, cwd=root, env=copy_environment(root), capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{' '.join(command[3:])}:\n{done.stdout}\n{done.stderr}"
    return root


@pytest.fixture(scope="module")
def sam_build(project_root: Path) -> Built:
    """The copy's build, its two new jobs' functions among the others."""
    return build(project_root, project_root.parent / "build")


@pytest.mark.parametrize("name", sorted(NEW_JOBS))
def test_a_job_the_command_made_does_through_sam_what_clockless_invoke_does(
    sam_local: SamLocal, reference: Stack, project_root: Path, name: str, workdir: Path
) -> None:
    template = Template.load(project_root / "template.yaml")
    (job,) = [job for job in jobs(template) if job.name == name]
    assert (job.worker_id is not None) == ("--fan-out" in NEW_JOBS[name])
    assert (project_root / "events" / job.package / "tick.json").is_file()

    every_sample_does_what_clockless_invoke_does(sam_local, reference, job, workdir, template)
