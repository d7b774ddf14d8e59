"""The jobs' declaration values checked before checkov reads the template, and the one shape of the
written-out template checkov cannot merge, folded away.

checkov parses the template we write out (`render`), and where it cannot read a construct it stops
with a Python traceback that names no line. Two causes are known here:
- a value in `Mappings: Jobs:` that is not a literal (CloudFormation's Mappings hold strings, numbers
  and lists of strings; an intrinsic such as `!Ref` passes cfn-lint's loop-unaware view and our
  expander, and then reaches checkov in place of a literal);
- a `Fn::FindInMap` `DefaultValue` that is an intrinsic other than `!Ref` to a parameter (our loops
  use a parameter's `!Ref` for a job's zones; anything deeper is left to the deployment and
  unreadable to the scan).
Each is reported as one line naming the template line, before the scan starts.

And checkov merges `Globals` into each function: a variable that `Globals` sets to
`!Join [",", !Ref List]` and a job sets to `!Join [",", [literal, ...]]` (a job's own
`OperatingTimeZones`) crashes that merge (a list where `Globals` has a `Ref`), so a `Fn::Join` of
literal strings is written as its text, which is what CloudFormation makes of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from clockless_tools.template.loader import load_yaml

_JOBS_MAPPING: Final = "Jobs"
_DEFAULT_VALUE: Final = re.compile(r"DefaultValue:\s*(?P<value>!\w+[^}\]]*|\{\s*\"?Fn::[^}]*)")
_REF_TO: Final = re.compile(r"^!Ref\s+(?P<name>[A-Za-z0-9]+)\s*$")


def declaration_problems(path: Path) -> list[str]:
    """One line per declaration value the scan cannot read: `template.yaml:LINE: what, and what would do`."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    document = load_yaml(text)
    problems = []
    jobs = (document.get("Mappings") or {}).get(_JOBS_MAPPING) or {}
    for job, keys in jobs.items() if isinstance(jobs, Mapping) else ():
        for key, value in keys.items() if isinstance(keys, Mapping) else ():
            if not _literal(value):
                where = f"{path.name}:{_line_of(lines, job, key)}: Mappings.{_JOBS_MAPPING}.{job}.{key}"
                problems.append(
                    f"{where} is {value!r}: a declaration value must be a literal string, number or list of strings "
                    "(CloudFormation's Mappings hold no intrinsics, and the security scan cannot read one)"
                )
    parameters = set(document.get("Parameters") or {})
    for number, text_line in enumerate(lines, 1):
        for found in _DEFAULT_VALUE.finditer(text_line.split(" #", 1)[0]):
            value = found["value"].strip()
            ref = _REF_TO.match(value)
            if ref is None or ref["name"] not in parameters:
                problems.append(
                    f"{path.name}:{number}: DefaultValue: {value} is an intrinsic the security scan cannot read: "
                    "write a literal, or !Ref to one of the template's parameters"
                )
    return problems


def fold_literal_joins(document: dict[str, Any]) -> dict[str, Any]:
    """The written-out template with each function's `Fn::Join` of literal strings written as its text."""
    for resource in (document.get("Resources") or {}).values():
        variables = ((resource.get("Properties") or {}).get("Environment") or {}).get("Variables")
        if not isinstance(variables, dict):
            continue
        for name, value in variables.items():
            joined = _literal_join(value)
            if joined is not None:
                variables[name] = joined
    return document


def _literal_join(value: Any) -> str | None:
    if not (isinstance(value, Mapping) and set(value) == {"Fn::Join"}):
        return None
    argument = value["Fn::Join"]
    if (
        isinstance(argument, list)
        and len(argument) == 2
        and isinstance(argument[0], str)
        and isinstance(argument[1], list)
        and all(isinstance(item, str) for item in argument[1])
    ):
        return argument[0].join(argument[1])
    return None


def _literal(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(item, str) for item in value)
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _line_of(lines: list[str], job: str, key: str) -> int:
    """The line of `key` in the job's block under Mappings: Jobs: (1-based; the block's when not found)."""
    try:
        start = lines.index(f"  {_JOBS_MAPPING}:")
        block = lines.index(f"    {job}:", start)
    except ValueError:
        return 1
    for number in range(block + 1, len(lines)):
        if lines[number].startswith(f"      {key}:"):
            return number + 1
        if lines[number].startswith("    ") and not lines[number].startswith("      ") and lines[number].strip():
            break
    return block + 1
