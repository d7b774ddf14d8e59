"""A copy of the project to plant a violation in, and what the rules then report about it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from clockless_tools.architecture import RULES, Project, Violation, check
from clockless_tools.template.model import Template
from clockless_tools.template.render import render

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# What the rules read: the template, the deployed code, the sample events, the import contracts
# and the tools they also cover.
COPIED = ("template.yaml", "pyproject.toml", "functions", "layers", "events", "tools")


@dataclass(frozen=True)
class PlantedCopy:
    root: Path

    @classmethod
    def of_project(cls, tmp_path: Path) -> PlantedCopy:
        root = tmp_path / "project"
        root.mkdir()
        for name in COPIED:
            source = PROJECT_ROOT / name
            if source.is_dir():
                shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, root / name)
        # Plants go into the expanded template: each job's resources written out, as CloudFormation
        # deploys them, so a plant lands in the one job's resource it names (not in the loop body).
        template = root / "template.yaml"
        template.write_text(render(Template.load(template).document), encoding="utf-8")
        return cls(root)

    @property
    def project(self) -> Project:
        return Project.at(self.root)

    def replace(self, relative: str, old: str, new: str, *, after: str = "") -> None:
        """Plant by replacing text that must be there, so a plant that misses fails loudly.

        With `after`, the first `old` following that (unique) anchor is replaced, e.g. a line in
        one function's section of template.yaml; otherwise `old` must occur exactly once.
        """
        path = self.root / relative
        text = path.read_text(encoding="utf-8")
        if after:
            assert text.count(after) == 1, f"{relative}: expected exactly one anchor {after!r}"
            start = text.index(after)
            at = text.find(old, start)
            assert at >= 0, f"{relative}: no {old!r} after {after!r} to plant over"
        else:
            assert text.count(old) == 1, f"{relative}: expected exactly one {old!r} to plant over"
            at = text.index(old)
        path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")

    def append(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")

    def write(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def delete(self, relative: str) -> None:
        (self.root / relative).unlink()

    def violations(self, rule: str) -> list[Violation]:
        """What `rule` reports, after checking that every rule still runs over the copy."""
        (selected,) = [r for r in RULES if r.name == rule]
        return check(self.project, [selected])


def found(violations: list[Violation], *, file: str, resource: str, containing: str = "") -> Violation:
    """The one violation at `file` about `resource` whose message contains `containing`."""
    matches = [v for v in violations if v.file == file and v.resource == resource and containing in v.message]
    assert matches, f"no violation at {file} for {resource} containing {containing!r}; got:\n" + "\n".join(
        f"  {v.rule} {v.location} {v.resource}: {v.message}" for v in violations
    )
    return matches[0]
