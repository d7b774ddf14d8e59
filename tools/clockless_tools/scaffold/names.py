"""A job's name, spelled every way the project needs it: `subscription-expiry` is the job,
`subscription_expiry` its package, `SubscriptionExpiry` the stem of its resources' logical ids."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from clockless_tools.errors import ToolError

_NAME: Final = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# Package names the project (or Python) already uses: a job named so would shadow them.
_TAKEN: Final = frozenset({"clockless", "clockless_tools", "tests", "job_trigger", "functions", "layers", "tools"})


class JobNameError(ToolError, ValueError):
    """The name cannot be a job's: the message says why and what would do."""


@dataclass(frozen=True)
class JobNames:
    job: str  # subscription-expiry: the schedule's Input, the ledger's key, the CLI's JOB
    package: str  # subscription_expiry: functions/<package>/<package>/
    stem: str  # SubscriptionExpiry: <stem>Function, <stem>Table, ...
    env: str  # SUBSCRIPTION_EXPIRY: <env>_TABLE_NAME

    @classmethod
    def of(cls, name: str) -> JobNames:
        if not _NAME.match(name):
            raise JobNameError(
                f"job name {name!r} must be lowercase words joined by hyphens, starting with a letter "
                "(e.g. subscription-expiry)"
            )
        package = name.replace("-", "_")
        if package in _TAKEN or not package.isidentifier():
            raise JobNameError(f"job name {name!r} would be package {package!r}, which the project already uses")
        return cls(
            job=name,
            package=package,
            stem="".join(part.capitalize() for part in name.split("-")),
            env=package.upper(),
        )

    @property
    def function_id(self) -> str:
        return f"{self.stem}Function"

    @property
    def table_id(self) -> str:
        return f"{self.stem}Table"

    @property
    def code_dir(self) -> str:
        return f"functions/{self.package}"

    @property
    def package_dir(self) -> str:
        return f"functions/{self.package}/{self.package}"

    def fill(self, text: str) -> str:
        """`text` with __JOB__, __PACKAGE__, __STEM__ and __ENV__ spelled for this job, its
        first-party imports in the order ruff's isort wants for this package's name."""
        filled = (
            text.replace("__JOB__", self.job)
            .replace("__PACKAGE__", self.package)
            .replace("__STEM__", self.stem)
            .replace("__ENV__", self.env)
        )
        return _sort_first_party(filled, {"clockless", "clockless_tools", "tests", self.package})


_FROM_IMPORT: Final = re.compile(r"^from (?P<module>[\w.]+) import .+$")


def _sort_first_party(text: str, first_party: set[str]) -> str:
    """Each run of `from <first party> import ...` statements (one line, or parenthesized over
    several) sorted by module, segment by segment (`clockless` < `clockless.dynamo` <
    `clockless_tools` < `tests`), as isort sorts one section."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        out.extend(sorted(run, key=lambda statement: _module(statement).split(".")))
        run.clear()

    for statement in _statements(text.split("\n")):
        match = _FROM_IMPORT.match(statement.split("\n", 1)[0])
        if match and match["module"].split(".", 1)[0] in first_party:
            run.append(statement)
        else:
            flush()
            out.append(statement)
    flush()
    return "\n".join(out)


def _statements(lines: list[str]) -> Iterator[str]:
    """The lines, a parenthesized `from ... import (` with its names and `)` joined into one."""
    pending: list[str] = []
    for line in lines:
        if pending:
            pending.append(line)
            if line == ")":
                yield "\n".join(pending)
                pending = []
        elif _FROM_IMPORT.match(line) and line.endswith("import ("):
            pending = [line]
        else:
            yield line
    yield from pending


def _module(statement: str) -> str:
    match = _FROM_IMPORT.match(statement.split("\n", 1)[0])
    return match["module"] if match else statement
