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

from clockless_tools.scaffold.declaration import TABLES_POLICY
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
    """Two jobs without fan-out made one after the other: the first brings in their loops (unless
    the project has such a job already), the second only joins them."""

    first: Numstat
    second: Numstat


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
        first, second = _unused_names(scratch, 2)
        return JobsWithoutFanOut(_made(scratch, first, fan_out=False), _made(scratch, second, fan_out=False))


def fanned_out_sentence(job: FannedOutJob) -> str:
    """docs/adding-a-job.md's sentence: what a fanned-out job adds."""
    diff = job.diff
    return (
        f"For `{job.name} --fan-out`, `clockless new job` adds {diff.new} new lines to `template.yaml` and "
        f"changes {diff.lines_out} (`git diff --numstat template.yaml`: {diff.lines_in} in, {diff.lines_out} out), "
        f"{job.table_lines} of them the table and {job.policy_lines} its tables policy; a job written out by hand "
        f"took {HAND_WRITTEN_LINES}.\n"
    )


def without_fan_out_sentence(jobs: JobsWithoutFanOut) -> str:
    """docs/decisions.md's sentence: what the first and a second job without fan-out add."""
    first, second = jobs.first, jobs.second
    return (
        f"Of the jobs without fan-out that `clockless new job` makes in a copy of the project, the first adds "
        f"{first.new} new lines and changes {first.lines_out} (`git diff --numstat`: {first.lines_in} in, "
        f"{first.lines_out} out), a second {second.new} new lines and {second.lines_out} changed.\n"
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
