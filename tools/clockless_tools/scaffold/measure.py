"""What `clockless new job` adds to template.yaml, measured: jobs made by the command itself in a
scratch copy of the files it edits, each template diffed as `git diff --numstat` counts.

`clockless new measure` prints the sentences docs/adding-a-job.md and docs/decisions.md show, as
generated blocks (`make docs` rewrites them when the declaration changes), so the docs state what
the command does today and tests/unit/test_new_job_measure.py checks the measuring, not the prose.
"""

from __future__ import annotations

import contextlib
import difflib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from clockless_tools.scaffold.declaration import FRAGMENT, TABLES_POLICY, plain_jobs, plain_loops
from clockless_tools.scaffold.names import JobNames
from clockless_tools.scaffold.new_job import new_job
from clockless_tools.scaffold.wiring import TABLE

# A fanned-out job written out by hand, before the declaration (docs/decisions.md): what the
# loop saves each job.
HAND_WRITTEN_LINES: Final = 358
# What `clockless new job` reads and edits, copied into the scratch project (and the folders it
# writes into).
_COPIED: Final = ("template.yaml", "pyproject.toml", "events/env.local.json")
_FOLDERS: Final = ("functions", "tests/unit", "events")
# Names the measured jobs take: the first ones the project has not taken.
_CANDIDATES: Final = ("subscription-expiry", "nightly-digest", "weekly-report", "probe-job-a", "probe-job-b")


@dataclass(frozen=True, slots=True)
class Numstat:
    """Lines in and out of a file's diff, as `git diff --numstat` counts them."""

    lines_in: int
    lines_out: int

    @property
    def new(self) -> int:
        """Lines added beyond those changed (a changed line counts once in and once out)."""
        return self.lines_in - self.lines_out

    @classmethod
    def of(cls, before: str, after: str) -> Numstat:
        diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))
        lines_in = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
        lines_out = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
        return cls(lines_in, lines_out)


@dataclass(frozen=True, slots=True)
class FannedOutJob:
    """A fanned-out job's template lines, and how many of them are its table and tables policy."""

    name: str
    diff: Numstat
    table_lines: int
    policy_lines: int


@dataclass(frozen=True, slots=True)
class JobsWithoutFanOut:
    """What jobs without fan-out add: in a project with none, the first (which brings in the two
    loops they share) and a second made after it; in one that has some (`existing`), one more.
    `loop_lines`: the loops' lines, counted where the command wrote them in template.yaml."""

    first: Numstat | None
    second: Numstat
    loop_lines: int
    existing: int = 0


def measure_fanned_out(root: Path) -> FannedOutJob:
    with _scratch(root) as scratch:
        (name,) = _unused_names(scratch, 1)
        diff = _made(scratch, name, fan_out=True)
    names = JobNames.of(name)
    return FannedOutJob(
        name=name,
        diff=diff,
        table_lines=len(names.fill(TABLE).splitlines()),
        policy_lines=len(names.fill(TABLES_POLICY).splitlines()),
    )


def measure_without_fan_out(root: Path) -> JobsWithoutFanOut:
    with _scratch(root) as scratch:
        template = scratch / "template.yaml"
        existing = len(plain_jobs(template.read_text(encoding="utf-8")))
        if existing:
            (name,) = _unused_names(scratch, 1)
            loop_lines = _loop_lines(template.read_text(encoding="utf-8"))
            return JobsWithoutFanOut(None, _made(scratch, name, fan_out=False), loop_lines, existing)
        first, second = _unused_names(scratch, 2)
        made_first = _made(scratch, first, fan_out=False)
        loop_lines = _loop_lines(template.read_text(encoding="utf-8"))
        return JobsWithoutFanOut(made_first, _made(scratch, second, fan_out=False), loop_lines)


def _loop_lines(text: str) -> int:
    """The lines of the two loops of jobs without fan-out, found in the template as the command writes
    them; a ValueError when they are not there as written (edited by hand), rather than a guess."""
    loops = plain_loops(plain_jobs(text))
    if not all(loop in text for loop in loops):
        raise ValueError(
            "template.yaml's loops of jobs without fan-out differ from what `clockless new job` writes "
            f"(tools/clockless_tools/template/fragments/{FRAGMENT.name}), so their lines cannot be counted"
        )
    return sum(len(loop.splitlines()) for loop in loops)


def fanned_out_sentence(job: FannedOutJob) -> str:
    """docs/adding-a-job.md's sentence: what a fanned-out job adds."""
    diff = job.diff
    return (
        f"For `{job.name} --fan-out` (daily, the loop's defaults; a `--schedule` adds a line per key it derives), "
        f"`clockless new job` adds {diff.new} new lines to `template.yaml` and "
        f"changes {diff.lines_out} (`git diff --numstat template.yaml`: {diff.lines_in} in, {diff.lines_out} out), "
        f"{job.table_lines} of them the table and {job.policy_lines} its tables policy; a job written out by hand "
        f"took {HAND_WRITTEN_LINES}.\n"
    )


def without_fan_out_sentence(jobs: JobsWithoutFanOut) -> str:
    """docs/decisions.md's sentence: what jobs without fan-out add, true of the project as it is."""
    second, loops = jobs.second, jobs.loop_lines
    if jobs.first is None:
        plural = "s" if jobs.existing != 1 else ""
        return (
            f"This project has {jobs.existing} job{plural} without fan-out, so the two loops such jobs share are in "
            f"`template.yaml` ({loops} lines, which the first brought in); another that `clockless new job` makes "
            f"in a copy of the project adds {second.new} new lines and changes {second.lines_out} "
            f"(`git diff --numstat`: {second.lines_in} in, {second.lines_out} out).\n"
        )
    first = jobs.first
    return (
        f"Of the jobs without fan-out that `clockless new job` makes in a copy of the project, the first adds "
        f"{first.new} new lines and changes {first.lines_out} (`git diff --numstat`: {first.lines_in} in, "
        f"{first.lines_out} out), {loops} of them the two loops such jobs share; a second {second.new} new lines "
        f"and {second.lines_out} changed.\n"
    )


def _made(scratch: Path, name: str, *, fan_out: bool) -> Numstat:
    template = scratch / "template.yaml"
    before = template.read_text(encoding="utf-8")
    new_job(scratch, name, fan_out=fan_out)
    return Numstat.of(before, template.read_text(encoding="utf-8"))


def _unused_names(scratch: Path, count: int) -> list[str]:
    text = (scratch / "template.yaml").read_text(encoding="utf-8")
    unused = [
        name
        for name in _CANDIDATES
        if not (scratch / JobNames.of(name).code_dir).exists() and f"{JobNames.of(name).stem}:" not in text
    ]
    if len(unused) < count:
        raise ValueError(f"the project has taken every name the measurement would use: {', '.join(_CANDIDATES)}")
    return unused[:count]


@contextlib.contextmanager
def _scratch(root: Path) -> Iterator[Path]:
    """A temporary project holding copies of what `clockless new job` reads and edits, and the
    project's package folders (empty: so a name the project has taken is seen as taken)."""
    with tempfile.TemporaryDirectory(prefix="clockless-measure-") as directory:
        scratch = Path(directory)
        for folder in _FOLDERS:
            (scratch / folder).mkdir(parents=True, exist_ok=True)
        for relative in _COPIED:
            shutil.copy2(root / relative, scratch / relative)
        for package in (root / "functions").iterdir():
            if package.is_dir():
                (scratch / "functions" / package.name).mkdir()
        yield scratch
