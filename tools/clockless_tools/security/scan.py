"""checkov over the template, each finding either explained by the skip list or a failure.

checkov runs from its own venv (`.venv-checkov`, `make security` installs it from
tools/checkov-requirements.txt): its pins (boto3 1.35, networkx 2.6, packaging 23) are not the dev
environment's. It is asked for JSON, offline (`--skip-download`: no guideline fetch, no API key).
Each skip entry names a check, a one-paragraph reason and, optionally, the only resources it holds
for; an entry without a reason, or one that matches no finding any more, fails the scan as well,
so the list says exactly what is accepted today and why.

checkov reads the template as the tools do, expanded (`Fn::ForEach` written out per job, as
CloudFormation's language extensions will): it cannot parse the loops, and a finding must name the
one job's resource it is about, not the loop body every job shares.
"""

from __future__ import annotations

import copy
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clockless_tools.errors import ToolError
from clockless_tools.security.declaration_values import declaration_problems, fold_literal_joins
from clockless_tools.template.loader import PROJECT_ROOT, TemplateError
from clockless_tools.template.model import Template
from clockless_tools.template.render import render

SKIPS = PROJECT_ROOT / "tools" / "checkov-skips.yaml"
CHECKOV = PROJECT_ROOT / ".venv-checkov" / "bin" / "checkov"


class ScanError(ToolError):
    """The scan could not run or its inputs are malformed; the message says what and where."""


@dataclass(frozen=True)
class Skip:
    check: str
    title: str
    reason: str
    resources: tuple[str, ...] = ()  # empty: every resource the check flags

    def covers(self, finding: Finding) -> bool:
        return finding.check == self.check and (not self.resources or finding.resource in self.resources)


@dataclass(frozen=True)
class Finding:
    check: str
    resource: str  # the template's logical id
    resource_type: str
    name: str  # checkov's title of the check

    def describe(self) -> str:
        return f"{self.check} {self.resource_type} {self.resource}: {self.name}"


@dataclass(frozen=True)
class Verdict:
    findings: list[Finding]
    unexplained: list[Finding]
    stale: list[Skip]
    passed: int

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.stale


def load_skips(path: Path = SKIPS) -> list[Skip]:
    """The skip list, each entry checked: a check id, a title and a reason, nothing else."""
    try:
        entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ScanError(f"{path}: {error}") from None
    if not isinstance(entries, list):
        raise ScanError(f"{path}: expected a list of entries (- check: ..., title: ..., reason: ...)")
    skips = []
    for number, entry in enumerate(entries, start=1):
        where = f"{path.name} entry {number}"
        if not isinstance(entry, dict):
            raise ScanError(f"{where}: expected a mapping with check, title and reason")
        unknown = set(entry) - {"check", "title", "reason", "resources"}
        if unknown:
            raise ScanError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        check, title, reason = (str(entry.get(key) or "").strip() for key in ("check", "title", "reason"))
        if not check.startswith("CKV"):
            raise ScanError(f"{where}: `check` must be a checkov id such as CKV_AWS_28, not {check!r}")
        if not title or not reason:
            raise ScanError(f"{where} ({check}): every entry states its title and the reason it is accepted")
        resources = entry.get("resources") or []
        if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
            raise ScanError(f"{where} ({check}): `resources` is a list of logical ids")
        skips.append(Skip(check, title, " ".join(reason.split()), tuple(resources)))
    return skips


def run_checkov(template: Path, checkov: Path = CHECKOV) -> dict[str, Any]:
    """checkov's JSON report over one CloudFormation/SAM template."""
    options = ["--framework", "cloudformation", "--output", "json", "--quiet", "--skip-download", "--compact"]
    try:
        problems = declaration_problems(template)
    except (OSError, TemplateError) as error:
        raise ScanError(f"{template}: {error}") from None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ScanError(problems[0] + more)
    if not checkov.exists():
        raise ScanError(f"{checkov} is not installed: `make security` installs it from tools/checkov-requirements.txt")
    expanded = render(fold_literal_joins(copy.deepcopy(dict(Template.load(template).document))))
    with tempfile.TemporaryDirectory(prefix="clockless-security-") as directory:
        scanned = Path(directory) / template.name
        scanned.write_text(expanded, encoding="utf-8")
        done = subprocess.run(
            [str(checkov), "--file", str(scanned), *options],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise ScanError(
            f"checkov exited {done.returncode} without a JSON report ({_last_line(done.stderr)}): {template.name} "
            "holds a construct it cannot read that the declaration checks do not know; bisect the last edit"
        ) from None
    # One framework asked for: one report (a list only when several frameworks ran).
    report = report[0] if isinstance(report, list) else report
    if not isinstance(report, dict) or "results" not in report:
        raise ScanError(f"checkov's report has no results (exit {done.returncode})")
    parsing = report.get("summary", {}).get("parsing_errors", 0)
    if parsing:
        raise ScanError(f"checkov could not parse {template}, expanded ({parsing} parsing error(s))")
    return report


def findings_of(report: dict[str, Any]) -> list[Finding]:
    found = []
    for failed in report["results"].get("failed_checks", []):
        resource_type, _, logical_id = str(failed["resource"]).rpartition(".")
        found.append(Finding(str(failed["check_id"]), logical_id, resource_type, str(failed.get("check_name", ""))))
    return sorted(found, key=lambda f: (f.check, f.resource))


def judge(report: dict[str, Any], skips: list[Skip]) -> Verdict:
    """Which findings no skip explains, and which skips explain no finding."""
    findings = findings_of(report)
    unexplained = [f for f in findings if not any(skip.covers(f) for skip in skips)]
    stale = [skip for skip in skips if not any(skip.covers(f) for f in findings)]
    stale += [
        Skip(skip.check, skip.title, skip.reason, (resource,))
        for skip in skips
        for resource in skip.resources
        if not any(f.check == skip.check and f.resource == resource for f in findings) and skip not in stale
    ]
    # --quiet leaves the passed checks out of the results; the summary still counts them.
    passed = int(report.get("summary", {}).get("passed", 0))
    return Verdict(findings, unexplained, stale, passed)


def skips_markdown(skips: list[Skip]) -> str:
    """The skip list as the table docs/security.md shows."""
    lines = ["| check | what it asks | accepted for | why |", "| --- | --- | --- | --- |"]
    for skip in skips:
        scope = ", ".join(f"`{r}`" for r in skip.resources) or "every resource it flags"
        lines.append(f"| `{skip.check}` | {skip.title} | {scope} | {skip.reason} |")
    return "\n".join(lines)


def _last_line(text: str) -> str:
    """The exception a traceback ends with (checkov's own lines say nothing of the template)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
