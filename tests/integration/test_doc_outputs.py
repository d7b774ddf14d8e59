"""Every output block README.md and docs/ mark `checked by` this file is run as a reader runs it, and
prints what the page shows (tests/doc_outputs.py says how blocks are marked and compared).

A page's checked blocks run in order, in one shell each command, from the project root with
`.venv/bin` on PATH, against an embedded runtime of the test's own, started first: `clockless local up` records its
server in a state file of the test's (`CLOCKLESS_LOCAL_STATE`) and listens on a free port
(`CLOCKLESS_LOCAL_PORT`), so a developer's own `make local-up` is never touched. The server is
stopped at the end whatever the page does. Slow (a page is a dozen fresh processes): CI runs it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from clockless_tools.template.loader import PROJECT_ROOT
from tests.doc_outputs import CHECKED_BY, OutputBlock, all_output_blocks, differences

CHECKED: dict[Path, list[OutputBlock]] = defaultdict(list)
for _block in all_output_blocks():
    if _block.marker == "checked by" and _block.detail == CHECKED_BY:
        CHECKED[_block.path].append(_block)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(command: str, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return done.stdout.splitlines()


def test_some_page_has_checked_outputs() -> None:
    assert CHECKED, f"no output block in README.md or docs/ is marked `checked by {CHECKED_BY}`"


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(CHECKED), ids=lambda path: str(path.relative_to(PROJECT_ROOT)))
def test_each_checked_command_prints_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CLOCKLESS_LOCAL_STATE": str(tmp_path / "local.json"),
        "CLOCKLESS_LOCAL_PORT": str(_free_port()),
        "MAKEFLAGS": "",
    }
    # The reader's shell, not the test's: no credentials or region the tests set, and no make above
    # it (`make test-slow` would make the page's own `make` print "Entering directory" and the CLI
    # name make variables in its errors).
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "MAKELEVEL",
        "MFLAGS",
        "CLOCKLESS_UNDER_MAKE",
    ):
        env.pop(name, None)
    problems = []
    # Pages other than the README's tour take the running runtime for granted; the tour's own
    # `make local-up` then finds it running and says so in the same words.
    _run(".venv/bin/clockless local up", env)
    try:
        for block in CHECKED[page]:
            for step in block.steps:
                printed = _run(step.command, env)
                for line in differences(step.output, printed):
                    problems.append(f"{block.where}: `{step.command}`: {line}")
    finally:
        _run(".venv/bin/clockless local down", env)
    assert not problems, "\n".join(problems)
