"""A template document written back as YAML in template.yaml's own style (two-space indent, short-form
intrinsics, flow lists of plain values): the expanded template, each job's resources written out.

`clockless template --expanded` shows it; the architecture tests plant violations into it, so a
plant lands in the one resource it names (a job's worker, a job's alarm) and not in the loop body
every job shares.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from clockless_tools.template.extensions import TRANSFORM

_INDENT: Final = "  "
# Keys whose lists template.yaml writes in flow style even though they hold intrinsics.
_FLOW_KEYS: Final = frozenset({"AlarmActions", "OKActions"})
# Scalars YAML 1.1 would read as something other than the string they are (numbers, booleans,
# null, base-60 times), or that its plain style cannot hold.
_AMBIGUOUS: Final = re.compile(
    r"^(|~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N"
    r"|[-+]?(\d[\d_]*)?\.?\d[\d_]*([eE][-+]?\d+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)|[-+]?0x[0-9a-fA-F_]+"
    r"|[-+]?0o?[0-7_]+|[-+]?\d[\d_]*(:[0-5]?\d)+(\.\d*)?|\d{4}-\d\d?-\d\d?([Tt ].*)?)$"
)
_PLAIN_UNSAFE_START: Final = (*"!&*{}[]|>'\"%@`#,?:-", " ")


def render(document: Mapping[str, Any]) -> str:
    """YAML for `document`; an expanded template's `Transform` keeps only the transforms still to run."""
    document = dict(document)
    if not _uses(document.get("Resources"), "Fn::FindInMap") and not _uses(document.get("Outputs"), "Fn::FindInMap"):
        document.pop("Mappings", None)  # all looked up: CloudFormation (cfn-lint W7001) calls an unused map a mistake
    transform = document.get("Transform")
    if isinstance(transform, list):
        rest = [name for name in transform if name != TRANSFORM]
        document["Transform"] = rest[0] if len(rest) == 1 else rest
    lines: list[str] = []
    for key, value in document.items():
        _entry(lines, 0, str(key), value)
        if isinstance(value, Mapping) and value:
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _uses(value: Any, function: str) -> bool:
    if isinstance(value, Mapping):
        return function in value or any(_uses(item, function) for item in value.values())
    if isinstance(value, list):
        return any(_uses(item, function) for item in value)
    return False


def _entry(lines: list[str], depth: int, key: str, value: Any) -> None:
    pad = _INDENT * depth
    head = f"{pad}{_scalar(key, flow=False)}:"
    literal = _literal(value)
    if literal is not None:
        tag, text = literal
        chomp = "" if text.endswith("\n") else "-"
        lines.append(f"{head} {tag} |{chomp}" if tag else f"{head} |{chomp}")
        lines.extend(f"{pad}{_INDENT}{line}" if line else "" for line in text.rstrip("\n").split("\n"))
        return
    inline = _inline(value, flow=False, key=key)
    if inline is not None:
        lines.append(f"{head} {inline}")
        return
    intrinsic = _intrinsic_name(value)
    if intrinsic is not None:
        tag, argument = intrinsic
        lines.append(f"{head} {tag}")
        _block(lines, depth + 1, argument)
        return
    lines.append(head)
    _block(lines, depth + 1, value)


def _block(lines: list[str], depth: int, value: Any) -> None:
    pad = _INDENT * depth
    if isinstance(value, Mapping):
        for key, item in value.items():
            _entry(lines, depth, str(key), item)
        return
    if isinstance(value, list):
        for item in value:
            inline = _inline(item, flow=False)
            if inline is not None:
                lines.append(f"{pad}- {inline}")
            elif isinstance(item, Mapping) and _intrinsic_name(item) is None:
                first = len(lines)
                _block(lines, depth + 1, item)
                lines[first] = f"{pad}- {lines[first].lstrip()}"
            else:
                tag, argument = _intrinsic_name(item) or ("", item)
                lines.append(f"{pad}- {tag}".rstrip())
                _block(lines, depth + 1, argument)
        return
    lines.append(f"{pad}{_scalar(value, flow=False)}")


def _literal(value: Any) -> tuple[str, str] | None:
    """A multi-line string (or `!Sub` of one), written as a literal block."""
    tag = ""
    if isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("Fn::Sub"), str):
        tag, value = "!Sub", value["Fn::Sub"]
    if isinstance(value, str) and "\n" in value.rstrip("\n") and not value.startswith((" ", "\n")):
        return tag, value
    return None


def _inline(value: Any, *, flow: bool, key: str = "") -> str | None:
    """`value` on one line, or None when it needs a block."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return _scalar(value, flow=flow)
    if isinstance(value, list):
        return _inline_list(value, key=key)
    if isinstance(value, Mapping):
        return "{}" if not value else _inline_intrinsic(value, flow=flow)
    return None


def _inline_list(value: list[Any], *, key: str) -> str | None:
    if not value:
        return "[]"
    if key not in _FLOW_KEYS and not all(isinstance(item, (str, int, float, bool)) for item in value):
        return None
    items = [_inline(item, flow=True) for item in value]
    if any(item is None for item in items):
        return None
    return "[" + ", ".join(str(item) for item in items) + "]"


def _inline_intrinsic(value: Mapping[str, Any], *, flow: bool) -> str | None:
    intrinsic = _intrinsic_name(value)
    if intrinsic is None:
        return None
    tag, argument = intrinsic
    if tag == "!GetAtt" and isinstance(argument, list) and all(isinstance(part, str) for part in argument):
        return f"!GetAtt {'.'.join(argument)}"
    if tag == "!Sub" and isinstance(argument, str):
        quoted = (
            f"'{argument}'" if '"' in argument and "'" not in argument else json.dumps(argument, ensure_ascii=False)
        )
        return f"!Sub {quoted}"
    if isinstance(argument, str):
        return f"{tag} {_scalar(argument, flow=flow)}"
    if isinstance(argument, list) and tag != "!Sub":
        items = [_inline(item, flow=True) for item in argument]
        if all(item is not None for item in items):
            return f"{tag} [" + ", ".join(str(item) for item in items) + "]"
    return None


def _intrinsic_name(value: Any) -> tuple[str, Any] | None:
    if not (isinstance(value, Mapping) and len(value) == 1):
        return None
    ((name, argument),) = value.items()
    if name in ("Ref", "Condition"):
        return f"!{name}", argument
    if isinstance(name, str) and name.startswith("Fn::") and "::" not in name[4:]:
        return f"!{name[4:]}", argument
    return None


def _scalar(value: Any, *, flow: bool) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    needs_quotes = (
        _AMBIGUOUS.match(text) is not None
        or text.startswith(_PLAIN_UNSAFE_START)
        or text != text.strip()
        or ": " in text
        or " #" in text
        or text.endswith(":")
        or "\n" in text
        or (flow and any(char in text for char in ",[]{}"))
    )
    if not needs_quotes:
        return text
    if '"' in text and "'" not in text and "\n" not in text and text.isprintable():
        # Single quotes keep JSON in a string readable: '{"job": "session-cleanup", ...}'.
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)
