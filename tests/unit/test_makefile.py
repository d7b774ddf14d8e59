"""`make help` is the Makefile's table of contents: every target it defines is listed with a line."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
TARGET = re.compile(r"^(?P<name>[a-z][a-z0-9-]*):(?!=)(?P<rest>.*)$")


def targets() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in MAKEFILE.read_text(encoding="utf-8").splitlines():
        match = TARGET.match(line)
        if match:
            _, _, description = match["rest"].partition("## ")
            found[match["name"]] = description.strip()
    return found


def test_every_target_has_a_one_line_description_for_make_help() -> None:
    listed = targets()

    assert {"help", "run", "test"} <= set(listed)
    assert [name for name, description in listed.items() if not description] == []


def test_every_target_is_phony() -> None:
    declaration = re.search(r"^\.PHONY:(.*?)(?<!\\)\n", MAKEFILE.read_text(encoding="utf-8"), re.S | re.M)
    assert declaration is not None
    phony = set(declaration[1].replace("\\\n", " ").split())

    assert set(targets()) - phony == set()


def test_make_help_prints_every_target_with_its_description() -> None:
    shown = subprocess.run(
        ["make", "--no-print-directory", "-C", str(MAKEFILE.parent), "help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    listed = {line.split()[1]: " ".join(line.split()[2:]) for line in shown.splitlines() if line.startswith("  make ")}

    assert listed == {name: " ".join(description.split()) for name, description in targets().items()}
