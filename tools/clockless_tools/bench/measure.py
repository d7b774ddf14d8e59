"""`make measure`: how long the README's two commands take here, written to bench/measured.json, the
file the docs' timing figures are generated from (`make docs`).

Each command runs as a reader runs it (`make run`, `make test`, from the project root); its wall
time, and its CPU time (user + system of it and every process it waited for, from `wait4`), are
recorded with the machine's core count and load average before and after, since a shared machine's
load moves every figure. Its output passes through to stderr, so the measurement speaks as it goes.
The test count comes from pytest's closing line; the count of test functions in tests/ is kept
beside it and shown with the figures, so a reader can tell how far the suite has moved since.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from clockless_tools.errors import ToolError
from clockless_tools.template.loader import PROJECT_ROOT

MEASURED: Final = PROJECT_ROOT / "bench" / "measured.json"
COMMANDS: Final = {"run": ("make", "run"), "test": ("make", "test")}
# pytest's closing line: "1,180 passed, 3 skipped, 66 deselected in 170.02s"
_OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)\b")


class MeasureError(ToolError, RuntimeError):
    """A measured command failed: its figures would describe a broken run."""


@dataclass(frozen=True)
class Timing:
    command: str
    wall_seconds: float
    cpu_seconds: float
    load_before: float
    load_after: float
    # pytest's counts (passed, skipped, deselected, ...), for a command that runs it
    tests: dict[str, int]


def timed(command: Sequence[str], *, cwd: Path = PROJECT_ROOT) -> Timing:
    """Run `command`, its output to stderr; wall and CPU time (it and the processes it waited for)."""
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    process = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    counts: dict[str, int] = {}
    for line in process.stdout:
        sys.stderr.write(line)
        found = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in _OUTCOME.findall(line)}
        if found and " in " in line:
            counts = found
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    if process.returncode != 0:
        raise MeasureError(f"`{' '.join(command)}` exited {process.returncode}: its figures would not be a passing run")
    return Timing(
        command=" ".join(command),
        wall_seconds=round(wall, 1),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 1),
        load_before=round(load_before, 2),
        load_after=round(os.getloadavg()[0], 2),
        tests=counts,
    )


def count_test_functions(root: Path = PROJECT_ROOT) -> int:
    """Test functions under tests/ (a parametrized one counts once): what the suite's size is made of."""
    count = 0
    for path in (root / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        count += sum(
            1
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
        )
    return count


def commit(root: Path = PROJECT_ROOT) -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or None


def measure(names: Sequence[str] = tuple(COMMANDS)) -> dict[str, Any]:
    """Time each named command (in COMMANDS' order) and describe the machine; the measured.json document."""
    timings = {name: asdict(timed(COMMANDS[name])) for name in COMMANDS if name in names}
    return {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "test_functions": count_test_functions(),
        "timings": timings,
    }


def write(document: dict[str, Any], path: Path = MEASURED) -> None:
    """Merge into the file: a partial measurement (`--only run`) keeps the other command's figures."""
    previous: dict[str, Any] = {}
    if path.exists():
        previous = json.loads(path.read_text(encoding="utf-8"))
    merged = {**previous, **document, "timings": {**previous.get("timings", {}), **document["timings"]}}
    path.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")


def _seconds(value: float) -> str:
    return f"{value:,.0f} s"


def _tests(counts: dict[str, int]) -> str:
    ran = sum(counts.get(kind, 0) for kind in ("passed", "failed", "skipped", "xfailed", "xpassed"))
    return f"{ran:,} tests"


def readme_sentence(document: dict[str, Any]) -> str:
    """The README's one line of figures, with how they were measured."""
    timings = document["timings"]
    parts = []
    if "run" in timings:
        run = timings["run"]
        parts.append(f"`make run` {_seconds(run['wall_seconds'])} ({_seconds(run['cpu_seconds'])} CPU)")
    if "test" in timings:
        test = timings["test"]
        parts.append(
            f"`make test` {_seconds(test['wall_seconds'])} ({_seconds(test['cpu_seconds'])} CPU) "
            f"for {_tests(test['tests'])} and the linters"
        )
    loads = [t[key] for t in timings.values() for key in ("load_before", "load_after")]
    return (
        f"Measured by `make measure` on {document['measured_at'][:10]} (commit {document['commit']}, "
        f"{document['cores']} cores, load average {min(loads):g} to {max(loads):g}): " + ", ".join(parts) + "."
    )


def markdown_table(document: dict[str, Any]) -> str:
    """docs/development.md's table: every measured command with its machine."""
    lines = [
        "| command | wall | CPU (user + sys) | load average (before, after) | tests |",
        "| --- | --- | --- | --- | --- |",
    ]
    for timing in document["timings"].values():
        counts = ", ".join(f"{n:,} {kind}" for kind, n in timing["tests"].items()) or "-"
        lines.append(
            f"| `{timing['command']}` | {_seconds(timing['wall_seconds'])} | {_seconds(timing['cpu_seconds'])} | "
            f"{timing['load_before']:g}, {timing['load_after']:g} | {counts} |"
        )
    lines.append("")
    lines.append(
        f"Measured {document['measured_at']} at commit {document['commit']} on {document['cores']} cores "
        f"(Python {document['python']}), with {document['test_functions']:,} test functions in tests/; "
        "`make measure` writes `bench/measured.json`, `make docs` this table."
    )
    return "\n".join(lines)
