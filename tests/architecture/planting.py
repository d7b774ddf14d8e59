"""A copy of the project to plant a violation in, and what the rules then report about it."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clockless_tools.architecture import RULES, Project, Violation, check
from clockless_tools.template.loader import load_yaml
from clockless_tools.template.model import Template
from clockless_tools.template.render import render

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# What the rules read: the template, the deployed code, the sample events, the import contracts and the
# stacks' names.
COPIED = ("template.yaml", "pyproject.toml", "samconfig.toml", "functions", "layers", "events")
# The tools are read by one rule only (their import contract): copied when a test plants into them
# or asks that rule or the whole project (two thirds of a copy's files, a third of the suite's CPU).
TOOLS = "tools"
TOOLS_RULE = "layering"


@dataclass(frozen=True)
class PlantedCopy:
    root: Path

    @classmethod
    def of_project(cls, tmp_path: Path) -> PlantedCopy:
        root = tmp_path / "project"
        root.mkdir()
        for name in COPIED:
            source = PROJECT_ROOT / name
            _copy(source, root / name)
        # Plants go into the expanded template: each job's resources written out, as CloudFormation
        # deploys them, so a plant lands in the one job's resource it names (not in the loop body).
        (root / "template.yaml").write_text(_expanded_project_template(), encoding="utf-8")
        return cls(root)

    @property
    def project(self) -> Project:
        """The copy as every rule reads it (the tools included)."""
        self.with_tools()
        return Project.at(self.root)

    def with_tools(self) -> None:
        if not (self.root / TOOLS).exists():
            _copy(PROJECT_ROOT / TOOLS, self.root / TOOLS)

    def replace(self, relative: str, old: str, new: str, *, after: str = "", resource: str = "") -> None:
        """Plant by replacing text that must be there, so a plant that misses fails loudly.

        In YAML, with `resource` (a template logical id) or `after` (a unique anchor line, e.g. a
        resource's `  LogicalId:` line), the first `old` in that anchor's block (the lines indented
        under it) is replaced, and it must be there: a plant lands in the resource it names, whatever
        other resources (a job added tomorrow) repeat the same text. Otherwise `old` must occur
        exactly once in the whole file. Elsewhere `after` picks the first `old` after the anchor.
        """
        self._tools_for(relative)
        path = self.root / relative
        text = path.read_text(encoding="utf-8")
        anchor = f"  {resource}:\n" if resource else after
        if anchor and relative.endswith((".yaml", ".yml")):
            start, end = _block(text, anchor, relative)
            block = text[start:end]
            assert old in block, f"{relative}: no {old!r} under {anchor.strip()!r} to plant over"
            at = start + block.index(old)
        elif anchor:  # TOML and the like: the first `old` after the (unique) anchor line
            assert text.count(anchor) == 1, f"{relative}: expected exactly one anchor {anchor!r}"
            at = text.find(old, text.index(anchor))
            assert at >= 0, f"{relative}: no {old!r} after {anchor!r} to plant over"
        else:
            assert text.count(old) == 1, f"{relative}: expected exactly one {old!r} to plant over"
            at = text.index(old)
        path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")

    def edit_resource(self, logical_id: str, edit: Callable[[dict[str, Any]], None]) -> None:
        """Plant by editing one resource of template.yaml as data (CloudFormation's long forms), the
        resource the rules read under that logical id, and writing the template back."""
        path = self.root / "template.yaml"
        document = load_yaml(path.read_text(encoding="utf-8"))
        assert logical_id in document["Resources"], f"template.yaml: no resource {logical_id} to plant in"
        edit(document["Resources"][logical_id])
        path.write_text(render(document), encoding="utf-8")

    def declare_overlap(self, policies: dict[str, str]) -> None:
        """Plant `Overlap: <policy>` in each job's Mappings.Jobs entry (by its stem) of the project's
        template, and write the template out again as the copy has it (loops expanded, maps looked
        up): plants in the template come after this one."""
        text = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
        for stem, policy in policies.items():
            entry = f"\n    {stem}:\n"
            assert text.count(entry) == 1, f"template.yaml: no one Mappings.Jobs entry {stem!r}"
            at = text.index(entry) + len(entry)
            text = f"{text[:at]}      Overlap: {policy}\n{text[at:]}"
        declared = self.root / "template.declared.yaml"
        declared.write_text(text, encoding="utf-8")
        (self.root / "template.yaml").write_text(render(Template.load(declared).document), encoding="utf-8")
        declared.unlink()

    def _tools_for(self, relative: str) -> None:
        if relative.split("/", 1)[0] == TOOLS:
            self.with_tools()

    def append(self, relative: str, text: str) -> None:
        self._tools_for(relative)
        path = self.root / relative
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")

    def write(self, relative: str, text: str) -> None:
        self._tools_for(relative)
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def delete(self, relative: str) -> None:
        self._tools_for(relative)
        (self.root / relative).unlink()

    def violations(self, rule: str) -> list[Violation]:
        """What `rule` reports, after checking that every rule still runs over the copy."""
        (selected,) = [r for r in RULES if r.name == rule]
        if rule == TOOLS_RULE:
            self.with_tools()
        return check(Project.at(self.root), [selected])


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        shutil.copy2(source, target)


@functools.cache
def _expanded_project_template() -> str:
    """The project's template with each job's resources written out: the same for every copy."""
    return render(Template.load(PROJECT_ROOT / "template.yaml").document)


def _block(text: str, anchor: str, relative: str) -> tuple[int, int]:
    """Where the anchor's block is: from the anchor to the next line indented no deeper than it."""
    assert text.count(anchor) == 1, f"{relative}: expected exactly one anchor {anchor!r}"
    start = text.index(anchor)
    first_line = anchor.lstrip("\n").splitlines()[0] if anchor.strip() else anchor
    indent = len(first_line) - len(first_line.lstrip(" "))
    end = len(text)
    offset = text.find("\n", start + len(anchor.rstrip("\n"))) + 1
    for line in text[offset:].splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and len(line) - len(line.lstrip(" ")) <= indent:
            end = offset
            break
        offset += len(line)
    return start, end


def found(violations: list[Violation], *, file: str, resource: str, containing: str = "") -> Violation:
    """The one violation at `file` about `resource` whose message contains `containing`."""
    matches = [v for v in violations if v.file == file and v.resource == resource and containing in v.message]
    assert matches, f"no violation at {file} for {resource} containing {containing!r}; got:\n" + "\n".join(
        f"  {v.rule} {v.location} {v.resource}: {v.message}" for v in violations
    )
    return matches[0]
