"""The README and docs/ match the code: every `clockless ...` command they show exists with the
options shown, every `make <target>` is in the Makefile, every relative link (and anchor) resolves,
every page is linked, and every generated table equals what its command prints today."""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from clockless_tools.bench.measure import COMMANDS, MEASURED, count_test_functions, markdown_table, readme_sentence
from clockless_tools.cli import docs as docs_command
from clockless_tools.cli.app import app
from clockless_tools.cli.generated import BEGIN, END, Block, DocsError, blocks, command_runner, documents, regenerate
from clockless_tools.template.loader import PROJECT_ROOT
from clockless_tools.template.model import Template
from tests.doc_outputs import CHECKED_BY, all_output_blocks, differences, output_blocks
from tests.unit.test_makefile import targets

DOCS = documents()
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
INLINE = re.compile(r"`(?P<code>[^`\n]+)`")
LINK = re.compile(r"(?<!\!)\[[^\]\n]*\]\((?P<target>[^)\s]+)\)")
SHELL_LANGS = {"", "sh", "bash", "shell", "console"}


def _name(path: Path) -> str:
    return path.relative_to(PROJECT_ROOT).as_posix() if path.is_relative_to(PROJECT_ROOT) else path.name


@dataclass(frozen=True, slots=True)
class Shown:
    """A command as a page shows it: where, and its words."""

    where: str
    text: str


def _prose_and_code(path: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
    """(line number, prose line) and (line number, code line, fence language) of a Markdown file."""
    prose: list[tuple[int, str]] = []
    code: list[tuple[int, str, str]] = []
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if match:
            fence = match["lang"] if fence is None else None
        elif fence is None:
            prose.append((number, line))
        else:
            code.append((number, line.strip(), fence))
    return prose, code


def _commands_in_block(lines: list[tuple[int, str, str]]) -> Iterator[tuple[int, str]]:
    """The command lines of one run of code lines: `$ ` lines where the block uses a prompt, else every
    line; backslash continuations joined, comments dropped, split at `&&`, `||`, `|` and `;`."""
    prompted = any(text.startswith("$ ") for _, text, _ in lines)
    pending = ""
    start = 0
    for number, line, lang in lines:
        if lang not in SHELL_LANGS:
            continue
        text = line
        if not pending:
            if prompted and not line.startswith("$ "):
                continue
            start = number
            text = line.removeprefix("$ ")
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        whole, pending = pending + text, ""
        whole = re.sub(r"(^|\s)#.*$", "", whole)
        for part in re.split(r"&&|\|\||(?<!\\)\||;", whole):
            yield start, " ".join(part.split())


def shown_commands(path: Path, program: str) -> list[Shown]:
    """Every `program ...` a page shows, in code blocks and in inline code."""
    prose, code = _prose_and_code(path)
    name = _name(path)
    found: list[Shown] = []
    runs: list[list[tuple[int, str, str]]] = []
    for number, text, lang in code:
        if runs and runs[-1][-1][0] == number - 1:
            runs[-1].append((number, text, lang))
        else:
            runs.append([(number, text, lang)])
    for run in runs:
        for number, command in _commands_in_block(run):
            text = command.removeprefix(".venv/bin/")
            if text == program or text.startswith(program + " "):
                found.append(Shown(f"{name}:{number}", text))
    for number, line in prose:
        for match in INLINE.finditer(line):
            text = match["code"].strip().removeprefix(".venv/bin/")
            if text.startswith(program + " "):
                found.append(Shown(f"{name}:{number}", text))
    return found


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def cli_problems(shown: Shown, root: Any) -> list[str]:
    """What a shown `clockless ...` command names that the CLI does not have. `root` is the click command
    Typer builds (Typer vendors its own click, so its classes are read by what they have)."""
    words = _words(shown.text.replace("\\|", "|"))[1:]
    command = root
    path = ["clockless"]
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        word = words.pop(0)
        sub = command.commands.get(word)
        if sub is None:
            return [f"{shown.where}: `{shown.text}`: `{' '.join(path)}` has no command `{word}`"]
        command, path = sub, [*path, word]
    known = {"--help"}
    for param in command.params:
        if param.param_type_name == "option":
            known.update(param.opts, param.secondary_opts)
    problems = []
    for word in words:
        option = word.strip("[]").partition("=")[0]
        if option.startswith("-") and option not in known and not re.fullmatch(r"-?\d.*", option):
            problems.append(f"{shown.where}: `{shown.text}`: `{' '.join(path)}` has no option `{option}`")
    return problems


def make_problems(shown: Shown, known: set[str]) -> list[str]:
    words = [w for w in _words(shown.text)[1:] if "=" not in w and not w.startswith("-")]
    return [f"{shown.where}: `{shown.text}`: the Makefile has no target `{w}`" for w in words if w not in known]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.strip().lower().replace("`", "")
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    prose, _ = _prose_and_code(path)
    return {slug(line.lstrip("#")) for _, line in prose if re.match(r"^#{1,6} ", line)}


def link_problems(path: Path) -> list[str]:
    prose, _ = _prose_and_code(path)
    problems = []
    for number, line in prose:
        for match in LINK.finditer(INLINE.sub("", line)):
            target = match["target"]
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            where = f"{_name(path)}:{number}"
            if not resolved.exists():
                problems.append(f"{where}: link to {target}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                problems.append(f"{where}: link to {target}: no heading with that anchor")
    return problems


REPO_PATH = re.compile(r"(?:tools|tests|functions|layers|events|bench|docs|clockless_tools)/[\w./-]*")


def path_problems(path: Path) -> list[str]:
    """Repository paths named in inline code (`tools/...`, or `clockless_tools/...` under tools/) that do not exist."""
    prose, _ = _prose_and_code(path)
    problems = []
    for number, line in prose:
        for match in INLINE.finditer(line):
            named = match["code"]
            if REPO_PATH.fullmatch(named) and not any(
                (base / named).exists() for base in (PROJECT_ROOT, PROJECT_ROOT / "tools")
            ):
                problems.append(f"{_name(path)}:{number}: `{named}` does not exist")
    return problems


ROOT_COMMAND = typer.main.get_command(app)
RUN = command_runner(app)


def test_the_pages_are_found() -> None:
    names = {p.relative_to(PROJECT_ROOT).as_posix() for p in DOCS}

    assert {"README.md", "docs/README.md", "docs/architecture-rules.md", "docs/performance.md"} <= names


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_clockless_command_shown_exists_with_its_options(path: Path) -> None:
    problems = [p for shown in shown_commands(path, "clockless") for p in cli_problems(shown, ROOT_COMMAND)]

    assert problems == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_make_target_shown_is_in_the_makefile(path: Path) -> None:
    known = set(targets())
    problems = [p for shown in shown_commands(path, "make") for p in make_problems(shown, known)]

    assert problems == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_relative_link_resolves(path: Path) -> None:
    assert link_problems(path) == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_repository_path_named_exists(path: Path) -> None:
    assert path_problems(path) == []


def test_the_docs_show_commands_the_checks_read() -> None:
    """The checks above read something: the README's tour and the docs' commands are found."""
    every = [s.text for path in DOCS for s in shown_commands(path, "clockless")]

    assert "clockless local seed" in every
    assert "clockless arch --list --markdown" in every
    assert any(text.startswith("clockless invoke SessionCleanupFunction") for text in every)
    assert any(s.text == "make run" for s in shown_commands(PROJECT_ROOT / "README.md", "make"))


@pytest.mark.parametrize("index", ["README.md", "docs/README.md"])
def test_every_docs_page_is_linked_from_the_readme_and_the_docs_index(index: str) -> None:
    page = PROJECT_ROOT / index
    linked = {(page.parent / m["target"].partition("#")[0]).resolve() for m in LINK.finditer(page.read_text())}
    pages = {p.resolve() for p in DOCS if p.parent.name == "docs" and p.name != "README.md"}

    unlinked = sorted(str(p.relative_to(PROJECT_ROOT)) for p in pages - linked)

    assert unlinked == [], f"add a line linking each page to the lists in README.md and docs/README.md: {unlinked}"


@pytest.mark.parametrize("section", ["Parameters", "Outputs"])
def test_every_template_parameter_and_output_is_described_in_the_deploying_page(section: str) -> None:
    template = Template.load(PROJECT_ROOT / "template.yaml")
    names = template.document.get(section, {})
    text = (PROJECT_ROOT / "docs" / "deploying.md").read_text(encoding="utf-8")
    # A job's own (its <Id>ScheduleState, its loops' outputs) is described once, as `<Id>...`.
    ids = sorted(template.document.get("Mappings", {}).get("Jobs", {}), key=len, reverse=True)

    def described(name: str) -> bool:
        per_job = [f"`<Id>{name.removeprefix(i)}`" for i in ids if name.startswith(i)]
        return f"`{name}`" in text or any(pattern in text for pattern in per_job)

    assert names
    assert [name for name in names if not described(name)] == []


def test_every_generated_table_is_current() -> None:
    # `clockless docs --check` as make test runs it: each block's command run on the CLI it runs in
    done = CliRunner().invoke(app, ["docs", "--check"])

    assert done.exit_code == 0, f"run `make docs` and commit the result:\n{done.stdout}{done.stderr}"
    assert done.stdout == "every generated table is current\n"


def test_the_docs_command_outside_the_clockless_cli_says_so() -> None:
    # Given the docs command on its own, without the CLI whose commands its blocks name
    done = CliRunner().invoke(docs_command.app, ["--check"])

    assert done.exit_code == 2
    assert done.stderr == "error: the blocks' commands run on the `clockless` CLI: run this command through it\n"


def test_the_generated_tables_are_there() -> None:
    commands = {b.command for p in DOCS for b in blocks(p)}

    assert {
        "clockless arch --list --markdown",
        "clockless bench show --markdown",
        "clockless schedules alarm-timing",
        "clockless schedules support",
    } <= commands


def test_every_generated_table_is_a_block_make_docs_rewrites() -> None:
    """A table generated some other way (its own markers, its own script) is one `make docs` and
    `clockless docs --check` would never see: every marker that says "generated" is a block's."""
    ad_hoc = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}"
        for path in DOCS
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("<!--") and "generated" in line and not BEGIN.match(line) and line.strip() != END
    ]

    assert ad_hoc == [], "write them as `<!-- generated by `clockless ...`; `make docs` rewrites it -->` blocks"


# The checks, each shown catching what it exists for.


def test_an_unknown_command_or_option_is_named(tmp_path: Path) -> None:
    bad = [
        Shown("x.md:1", "clockless simulate --seed 3 --no-such-option"),
        Shown("x.md:2", "clockless local sideways"),
        Shown("x.md:3", "clockless arch --list --markdown"),
    ]

    problems = [p for shown in bad for p in cli_problems(shown, ROOT_COMMAND)]

    assert problems == [
        "x.md:1: `clockless simulate --seed 3 --no-such-option`: `clockless simulate` has no option `--no-such-option`",
        "x.md:2: `clockless local sideways`: `clockless local` has no command `sideways`",
    ]


def test_commands_are_read_from_prompts_continuations_pipes_and_inline_code(tmp_path: Path) -> None:
    page = tmp_path / "planted.md"
    page.write_text(
        "Run `clockless status --nope` or `make nowhere`.\n\n"
        "```\n$ clockless simulate \\\n    --frm 2026-11-27T00:00:00Z | tee x\nclockless output line --ignored\n```\n"
        "```sh\nmake local-up && clockless local seed --tenant 2  # comment --also-ignored\n```\n",
        encoding="utf-8",
    )
    clockless = [s.text for s in shown_commands(page, "clockless")]
    make = [s.text for s in shown_commands(page, "make")]
    problems = [p for text in clockless for p in cli_problems(Shown("p", text), ROOT_COMMAND)]
    make_missing = [p for text in make for p in make_problems(Shown("p", text), set(targets()))]

    assert clockless == [
        "clockless simulate --frm 2026-11-27T00:00:00Z",
        "clockless local seed --tenant 2",
        "clockless status --nope",
    ]
    assert [p.rpartition(" ")[2] for p in problems] == ["`--frm`", "`--tenant`", "`--nope`"]
    assert make_missing == ["p: `make nowhere`: the Makefile has no target `nowhere`"]


def test_a_broken_link_anchor_or_path_is_named(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Index\n", encoding="utf-8")
    (tmp_path / "simulation.md").write_text("# Simulation: `make run`\n", encoding="utf-8")
    page = tmp_path / "planted.md"
    page.write_text(
        "# A `heading`, here\n\n[ok](#a-heading-here) [ok](README.md) [gone](nowhere.md) "
        "[bad anchor](simulation.md#no-such-heading) [web](https://example.com/x) `[code](not-a-link.md)`\n"
        "`tools/clockless_tools/gone.py` `clockless_tools/cli/app.py` `tests/unit/test_docs.py`\n",
        encoding="utf-8",
    )
    problems = link_problems(page) + path_problems(page)

    assert problems == [
        "planted.md:3: link to nowhere.md: no such file",
        "planted.md:3: link to simulation.md#no-such-heading: no heading with that anchor",
        "planted.md:4: `tools/clockless_tools/gone.py` does not exist",
    ]


def test_a_stale_generated_block_is_found_and_rewritten(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    head = "<!-- generated by `clockless arch --list --markdown`; `make docs` rewrites it -->"
    page.write_text(f"intro\n{head}\n| old |\n<!-- end generated -->\nafter\n", encoding="utf-8")

    text, stale = regenerate(page, run=lambda command: "| new |\n")

    assert stale == [Block(page, 2, "clockless arch --list --markdown", "| old |\n")]
    assert text == f"intro\n{head}\n| new |\n<!-- end generated -->\nafter\n"
    assert regenerate(page, run=lambda command: "| old |\n")[1] == []


def test_an_unterminated_generated_block_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- generated by `clockless bench show --markdown`; `make docs` rewrites it -->\n| x |\n")

    with pytest.raises(DocsError, match="end generated"):
        list(blocks(page))


def test_every_output_a_page_shows_is_checked_by_a_run_or_says_why_it_is_illustrative() -> None:
    problems = []
    for block in all_output_blocks():
        if block.marker is None:
            problems.append(
                f"{block.where}: an output block with no comment before it: `<!-- output: checked by "
                f"{CHECKED_BY} -->` (and it is run), or `<!-- output: illustrative: <why> -->`"
            )
        elif block.marker == "checked by" and block.detail != CHECKED_BY:
            problems.append(f"{block.where}: checked by {block.detail!r}: only {CHECKED_BY} runs output blocks")
        elif block.marker == "illustrative:" and len(block.detail.split()) < 3:
            problems.append(f"{block.where}: illustrative without a reason ({block.detail!r})")
    assert problems == []


def test_output_blocks_are_found_and_compared_as_documented(tmp_path: Path) -> None:
    # Given a page with a marked block, an unmarked one, and a command shown alone
    page = tmp_path / "page.md"
    page.write_text(
        f"<!-- output: checked by {CHECKED_BY} -->\n```\n$ clockless local seed\nseeded 1 program\n```\n\n"
        "```\n$ clockless local status\nrunning on http://127.0.0.1:8765 (pid 12)\n```\n"
        "```sh\nmake run   # a command alone is no output block\n```\n",
        encoding="utf-8",
    )

    blocks = output_blocks(page)

    assert [(b.line, b.marker, [s.command for s in b.steps]) for b in blocks] == [
        (2, "checked by", ["clockless local seed"]),
        (7, None, ["clockless local status"]),
    ]
    # pids, ports and finishing times differ from run to run; `...` stands for any lines
    shown, printed = "running on http://127.0.0.1:8765 (pid 12)", "running on http://127.0.0.1:4100 (pid 9)"
    assert differences((shown,), [printed]) == []
    assert differences(("a", "...", "z"), ["a", "b", "c", "z"]) == []
    assert differences(("a", "z"), ["a", "b", "z"]) != []
    assert differences(('{"finished_at": "2026-12-01T03:51:25Z"}',), ['{"finished_at": "2027-01-01T00:00:00Z"}']) == []


def test_the_measured_timings_are_of_the_commands_the_docs_name() -> None:
    document = json.loads(MEASURED.read_text(encoding="utf-8"))

    assert document["timings"], "bench/measured.json holds no timing: run `make measure`"
    assert set(document["timings"]) <= set(COMMANDS)


MEASURED_SAMPLE: dict[str, Any] = {
    "measured_at": "2026-12-01T19:53:04Z",
    "commit": "9e4d843",
    "cores": 2,
    "python": "3.13.0",
    "test_functions": 1801,
    "timings": {
        "run": {
            "command": "make run",
            "wall_seconds": 15.5,
            "cpu_seconds": 26.4,
            "load_before": 1.64,
            "load_after": 1.72,
            "tests": {},
        },
        "test": {
            "command": "make test",
            "wall_seconds": 150.1,
            "cpu_seconds": 257.9,
            "load_before": 1.72,
            "load_after": 1.95,
            "tests": {"passed": 1562, "skipped": 3},
        },
    },
}


def test_the_timing_figures_are_written_from_the_measurement() -> None:
    # Given what `make measure` wrote, When the docs' figures are generated from it
    sentence, table = readme_sentence(MEASURED_SAMPLE), markdown_table(MEASURED_SAMPLE)

    # Then they state its figures, and when, where and on how large a suite they were measured
    assert sentence == (
        "Measured by `make measure` on 2026-12-01 (commit 9e4d843, 2 cores, load average 1.64 to 1.95): "
        "`make run` 16 s (26 s CPU), `make test` 150 s (258 s CPU) for 1,565 tests and the linters."
    )
    assert table.splitlines()[2:4] == [
        "| `make run` | 16 s | 26 s | 1.64, 1.72 | - |",
        "| `make test` | 150 s | 258 s | 1.72, 1.95 | 1,562 passed, 3 skipped |",
    ]
    assert table.endswith(
        "(Python 3.13.0), with 1,801 test functions in tests/; "
        "`make measure` writes `bench/measured.json`, `make docs` this table."
    )


def test_the_suites_size_is_counted_in_test_functions(tmp_path: Path) -> None:
    # Given a suite of two test functions, one parametrized, beside a helper and a non-test module
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_some.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_a(n: int) -> None: ...\n\n"
        "def test_b() -> None: ...\n\ndef helper() -> None: ...\n",
        encoding="utf-8",
    )
    (tmp_path / "tests" / "support.py").write_text("def test_like_but_not_collected() -> None: ...\n")

    assert count_test_functions(tmp_path) == 2
