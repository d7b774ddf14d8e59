"""Every `clockless ...` command an alarm, a hint or an error message names is one the CLI accepts:
the texts of template.yaml (alarm descriptions, outputs, comments) and every message of the tools,
the kit and the functions, parsed by the CLI's own command tree (its options, arguments and
subcommands checked, the command itself not run)."""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer._click.exceptions import ClickException, MissingParameter  # Typer (0.29) parses with its own click

from clockless_tools.cli.app import app
from tests.jobs import PROJECT_ROOT, jobs

ROOT = typer.main.get_command(app)
COMMANDS: frozenset[str] = frozenset(getattr(ROOT, "commands", {}))

# Where texts name commands: the template (and the fragments its loops expand), and the messages of
# everything that runs (docstrings are documentation, checked where the docs' commands are run).
YAML_TEXTS = (PROJECT_ROOT / "template.yaml", *sorted((PROJECT_ROOT / "tools").rglob("*.yaml")))
PYTHON_ROOTS = (PROJECT_ROOT / "tools", PROJECT_ROOT / "layers" / "clockless" / "clockless", PROJECT_ROOT / "functions")

# A placeholder in a text (`<job>`, `${Name}`, `__JOB__`, an f-string's `{job}`) stands for a job.
_PLACEHOLDER = re.compile(r"<[^<>\s]+>|\$\{[^}]+\}|__[A-Z]+__|\x00")
_MENTION = re.compile(r"(?<![\w.-])clockless\s+([a-z][a-z-]*)")
# Where a command not set in backticks ends: before punctuation that prose puts after it.
_PROSE_END = re.compile(r"[)\];,:`]|\.(\s|$)")


@dataclass(frozen=True, slots=True)
class Mention:
    where: str  # file:line
    command: str  # what follows `clockless`, up to where the command ends


def _mentions(text: str, where: str, lines: list[int] | None = None) -> Iterator[Mention]:
    """Each command `text` names; `lines`: where each line of `text` starts, to say which line it is on."""
    for match in _MENTION.finditer(text):
        if match.group(1) not in COMMANDS:
            continue  # prose: "the clockless job kit"
        rest = text[match.start(1) :]
        end = rest.find("`") if text[match.start() - 1 : match.start()] == "`" else -1
        if end < 0:
            stop = _PROSE_END.search(rest)
            end = stop.start() if stop else len(rest)
        line = f":{bisect.bisect_right(lines, match.start())}" if lines else ""
        yield Mention(f"{where}{line}", " ".join(rest[:end].split()))


def _yaml_mentions(path: Path) -> Iterator[Mention]:
    # A text wraps over lines (folded scalars, comments): read the file as one line, comment marks dropped.
    lines = [line.strip().removeprefix("#").strip() for line in path.read_text(encoding="utf-8").splitlines()]
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    yield from _mentions(" ".join(lines), str(path.relative_to(PROJECT_ROOT)), starts)


# A file whose source has no `clockless` that a command could follow (not `clockless_tools`, not
# `clockless.`) names none: the rest are parsed. A string's value ends its `clockless` with a space;
# its source with a space, a quote, a newline or an escape's backslash, never a word character or a dot.
_MAY_MENTION = re.compile(r"clockless(?![\w.])")


def _python_texts(path: Path) -> Iterator[tuple[str, int]]:
    text = path.read_text(encoding="utf-8")
    if not _MAY_MENTION.search(text):
        return
    # One walk: the docstrings and an f-string's parts are known only once every node is seen.
    docstrings: set[int] = set()
    in_fstrings: set[int] = set()
    candidates: list[ast.JoinedStr | ast.Constant] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
        elif isinstance(node, ast.JoinedStr):
            in_fstrings.update(id(part) for part in node.values)
            candidates.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            candidates.append(node)
    for node in candidates:
        if isinstance(node, ast.JoinedStr):
            parts = [
                part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "\x00"
                for part in node.values
            ]
            yield "".join(parts), node.lineno
        elif isinstance(node.value, str) and id(node) not in docstrings and id(node) not in in_fstrings:
            yield node.value, node.lineno


def _python_mentions() -> Iterator[Mention]:
    for root in PYTHON_ROOTS:
        for path in sorted(root.rglob("*.py")):
            for text, line in _python_texts(path):
                yield from _mentions(text, f"{path.relative_to(PROJECT_ROOT)}:{line}")


def _all_mentions() -> list[Mention]:
    found = [mention for path in YAML_TEXTS for mention in _yaml_mentions(path)]
    return [*found, *_python_mentions()]


def _invocations(command: str, job: str) -> Iterator[list[str]]:
    """The argument lists a mention stands for: `work show|redrive <job>` is two."""
    words = _PLACEHOLDER.sub(job, command).split()
    alternatives = [word.split("|") if "|" in word and not word.startswith("-") else [word] for word in words]
    lists: list[list[str]] = [[]]
    for choices in alternatives:
        lists = [[*done, choice] for done in lists for choice in choices]
    yield from lists


def parse(args: list[str]) -> None:
    """Parse `clockless <args>` as the CLI would, without running it; raise the CLI's usage error.
    A text that names only a command (`clockless pause`, no job) names it; its arguments are the
    command's --help's to tell."""
    command: Any = ROOT
    path = ["clockless"]
    rest = list(args)
    while hasattr(command, "commands"):
        if not rest:
            return  # a group named alone (`clockless bench`): its --help lists its commands
        if rest[0] not in command.commands:
            raise ClickException(f"{' '.join(path)} has no command {rest[0]}")
        path.append(rest[0])
        command = command.commands[rest.pop(0)]
    try:
        command.make_context(" ".join(path), list(rest))  # the parser consumes the list it is given
    except MissingParameter:
        if rest:
            raise


MENTIONS = _all_mentions()
JOB = jobs()[0].name


def test_the_texts_name_commands_from_every_source() -> None:
    sources = {mention.where.split(":")[0] for mention in MENTIONS}

    assert "template.yaml" in sources
    assert any(source.startswith("layers/") for source in sources)
    assert any(source.startswith("tools/clockless_tools/operations/") for source in sources)
    assert len(MENTIONS) > 30


@pytest.mark.parametrize("mention", MENTIONS, ids=[f"{m.where} {m.command}" for m in MENTIONS])
def test_every_named_command_is_one_the_cli_accepts(mention: Mention) -> None:
    for args in _invocations(mention.command, JOB):
        try:
            parse(args)
        except ClickException as error:
            pytest.fail(f"{mention.where}: `clockless {' '.join(args)}` is refused: {error.format_message()}")


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("Items failed alone (clockless status ${Name} lists them); fix the rows", "status"),
        ("run it again: clockless run-now --at 2026-11-29T09:00:00Z", "run-now"),
        ("run `clockless backfill session-cleanup --since 2026-11-29T00:00:00Z`", "backfill"),
        ("see `clockless statuz`", None),
    ],
    ids=["extra-argument", "missing-argument", "unknown-option", "unknown-command-is-prose"],
)
def test_a_command_the_cli_refuses_is_caught(text: str, refused: str | None) -> None:
    # Given a hint that names a command wrongly
    mentions = list(_mentions(text.replace("${Name}", JOB), "planted"))

    # When each is parsed, Then the parser refuses it (a word that is no command is prose, not a mention)
    if refused is None:
        assert mentions == []
        return
    (mention,) = mentions
    assert mention.command.split()[0] == refused
    (args,) = _invocations(mention.command, JOB)
    with pytest.raises(ClickException):
        parse(args)


def test_a_file_is_parsed_unless_its_source_cannot_name_a_command(tmp_path: Path) -> None:
    # Given a hint split over an implicit concatenation, and a file that only imports the packages
    hinted = tmp_path / "hinted.py"
    source = 'HINT = ("run clockless"\n    " status now")\nDOC = f"clockless\\nstatus {1}"\n'
    hinted.write_text(source, encoding="utf-8")
    imports = tmp_path / "imports.py"
    imports.write_text('import clockless.job\nimport clockless_tools\nNAME = "clockless_tools.cli"\n', encoding="utf-8")

    # When their texts are read, Then the hint's whole text is found, and the imports' file is
    # skipped (read, it would give "clockless_tools.cli")
    assert [text for text, _ in _python_texts(hinted)] == ["run clockless status now", "clockless\nstatus \x00"]
    assert list(_python_texts(imports)) == []
