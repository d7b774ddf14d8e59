"""The command outputs README.md and docs/ show: where they are, what marks them, how they compare.

A fenced block that shows a `$ ` command followed by what it printed is an output block. The line
before it says how it is kept true, in one of two comments:

    <!-- output: checked by tests/integration/test_doc_outputs.py -->
    <!-- output: illustrative: <why it cannot be run here> -->

A checked block is run, command by command, by that test against an embedded runtime of its own,
and what each command prints on stdout (a page shows stderr with `2>&1`) is compared with the
lines under it after `normalise` (times, ids,
pids and ports that differ from run to run); a line `...` stands for any lines. An illustrative
block says why it is not run (an AWS account, a time of day); tests/unit/test_docs.py fails on an
output block with neither comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from clockless_tools.cli.generated import documents
from clockless_tools.template.loader import PROJECT_ROOT

MARKER: Final = re.compile(r"^<!-- output: (?P<kind>checked by|illustrative:) (?P<detail>.+?) -->$")
CHECKED_BY: Final = "tests/integration/test_doc_outputs.py"
FENCE: Final = re.compile(r"^ *```")
PROMPT: Final = "$ "
ELLIPSIS: Final = "..."


@dataclass(frozen=True)
class Step:
    """One shown command and the lines shown under it (before the next command)."""

    command: str
    output: tuple[str, ...]


@dataclass(frozen=True)
class OutputBlock:
    path: Path
    line: int  # of the opening fence, 1-based
    marker: str | None  # the comment's kind ("checked by", "illustrative:"), None when missing
    detail: str
    steps: tuple[Step, ...]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(PROJECT_ROOT)}:{self.line}"


def output_blocks(path: Path) -> list[OutputBlock]:
    """Every fenced block of the file with a `$ ` command followed by output."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    index = 0
    while index < len(lines):
        if not FENCE.match(lines[index]):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        body = lines[index + 1 : end]
        steps = _steps(body)
        if steps and any(step.output for step in steps):
            previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
            match = MARKER.match(previous.strip())
            found.append(
                OutputBlock(
                    path,
                    index + 1,
                    match["kind"] if match else None,
                    match["detail"].strip() if match else "",
                    tuple(steps),
                )
            )
        index = end + 1
    return found


def _steps(body: list[str]) -> list[Step]:
    steps: list[Step] = []
    command: str | None = None
    output: list[str] = []
    for line in body:
        if line.startswith(PROMPT):
            if command is not None:
                steps.append(Step(command, tuple(output)))
            command, output = line.removeprefix(PROMPT), []
        elif command is not None:
            output.append(line)
    if command is not None:
        steps.append(Step(command, tuple(output)))
    return steps


def all_output_blocks() -> list[OutputBlock]:
    return [block for path in documents() for block in output_blocks(path)]


# What differs from run to run, and what stands in for it on both sides of a comparison.
_VOLATILE: Final = (
    (re.compile(r'"(finished_at|started_at)": "[^"]*"'), r'"\1": "<time>"'),
    (re.compile(r'"duration_ms": \d+'), '"duration_ms": <ms>'),
    (re.compile(r"\bpid \d+"), "pid <pid>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"\bport \d+"), "port <port>"),
    # A backfill over a range relative to now (`--from "$(date ...)"`): its range and its ticks.
    (re.compile(r"missing tick\(s\) in \[[^,]+, [^)]+\)"), "missing tick(s) in [<from>, <to>)"),
    (re.compile(r"^  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  "), "  <tick>  "),
)


def normalise(line: str) -> str:
    for pattern, replacement in _VOLATILE:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def differences(shown: tuple[str, ...], printed: list[str]) -> list[str]:
    """Where the printed lines differ from the shown ones (`...` matches any lines); [] when alike."""
    expected = [normalise(line) for line in shown]
    actual = [normalise(line) for line in printed]
    if _matches(expected, actual):
        return []
    return [f"shown:   {line}" for line in expected] + [f"printed: {line}" for line in actual]


def _matches(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == ELLIPSIS:
        return any(_matches(rest, actual[skip:]) for skip in range(len(actual) + 1))
    return bool(actual) and actual[0] == head and _matches(rest, actual[1:])
