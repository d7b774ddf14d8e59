"""`clockless arch`: the architecture rules over template.yaml and the code, every violation at once."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from typing import Annotated

import typer
from rich.markup import escape

from clockless_tools.architecture import RULES, Project, Rule, check
from clockless_tools.architecture.environment_size import environment_table
from clockless_tools.architecture.import_graph import PackageModule, package_modules
from clockless_tools.cli.common import CHECK, TemplateOption, fail
from clockless_tools.cli.common import line_stdout as stdout
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError

app = typer.Typer()


@app.command("arch", rich_help_panel=CHECK)
def arch(
    template: TemplateOption = DEFAULT_TEMPLATE,
    rule: Annotated[
        list[str] | None,
        typer.Option("--rule", "-r", help="Check only this rule (repeatable). E.g. -r least-privilege"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the violations as JSON.")] = False,
    list_rules: Annotated[bool, typer.Option("--list", help="List the rules instead of checking them.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="With --list: a Markdown table (docs/architecture-rules.md).")
    ] = False,
    modules: Annotated[
        str | None,
        typer.Option(
            "--modules",
            help="List a package's modules instead, each before those it imports, as a Markdown table. "
            "E.g. --modules clockless.fanout (docs/fan-out.md)",
        ),
    ] = None,
    environments: Annotated[
        bool,
        typer.Option(
            "--environments",
            help="Print each function's environment size at its longest instead, as rule environment-size "
            "counts it, as a Markdown table (docs/http-trigger.md).",
        ),
    ] = False,
) -> None:
    """Check the architecture rules; exit 1 if any is broken, printing each violation with its fix."""
    if modules is not None or environments:
        checking = bool(rule or as_json or list_rules or markdown)
        print_alone(
            Project.for_template(template), modules, checking=checking or (modules is not None and environments)
        )
        return
    known = {r.name: r for r in RULES}
    unknown = sorted(set(rule or []) - set(known))
    if unknown:
        raise fail(f"unknown rule {', '.join(unknown)} (rules: {', '.join(known)})")
    selected = [known[name] for name in rule] if rule else list(RULES)
    if markdown and not list_rules:
        raise fail("--markdown goes with --list (clockless arch --list --markdown)")
    if list_rules:
        print_rules(selected, markdown=markdown, as_json=as_json)
        return
    started = time.monotonic()
    try:
        violations = check(Project.for_template(template), selected)
    except TemplateError as error:
        raise fail(str(error)) from None
    elapsed = time.monotonic() - started
    if as_json:
        print(json.dumps({"ok": not violations, "violations": [v.as_dict() for v in violations]}, indent=2))
    else:
        for v in violations:
            stdout.print(f"[bold red]{v.rule}[/]  {escape(v.location)}  [bold]{escape(v.resource)}[/]")
            stdout.print(f"    {escape(v.message)}")
            stdout.print(f"    [green]fix:[/] {escape(v.fix)}")
        counts = Counter(v.rule for v in violations)
        for r in selected:
            mark = "[green]ok[/]  " if not counts[r.name] else f"[bold red]{counts[r.name]:>3}[/] "
            stdout.print(f"{mark} {r.name:<24} {escape(r.summary)}")
        verdict = "[green]all rules hold[/]" if not violations else f"[bold red]{len(violations)} violation(s)[/]"
        stdout.print(f"{verdict} ({elapsed:.2f} s)")
    if violations:
        raise typer.Exit(code=1)


def print_rules(rules: list[Rule], *, markdown: bool, as_json: bool) -> None:
    if markdown:
        print(rules_markdown(rules))
    elif as_json:
        print(json.dumps([{"rule": r.name, "summary": r.summary, **rule_files(r)} for r in rules], indent=2))
    else:
        for r in rules:
            stdout.print(f"{r.name:<24} {escape(r.summary)}")


def print_alone(project: Project, modules: str | None, *, checking: bool) -> None:
    """--modules or --environments, which take no other option."""
    if modules is not None:
        if checking:
            raise fail("--modules goes alone (clockless arch --modules clockless.fanout)")
        print_modules(project, modules)
        return
    if checking:
        raise fail("--environments goes alone (clockless arch --environments)")
    print_environments(project)


def print_environments(project: Project) -> None:
    try:
        print(environment_table(project))
    except (TemplateError, ValueError) as error:
        raise fail(f"--environments: {error}") from None


def print_modules(project: Project, package: str) -> None:
    try:
        listed = package_modules(project, package)
    except ValueError as error:
        raise fail(f"--modules {package}: {error}") from None
    print(modules_markdown(package, listed))


def modules_markdown(package: str, modules: Iterable[PackageModule]) -> str:
    """A package's modules as a Markdown table: the module, its docstring's first sentence, and the
    package's modules it imports (any import: at the top, in a function, or for the type checker)."""

    def short(module: str) -> str:
        return module.removeprefix(f"{package}.")

    lines = [f"| module | what it is | imports (of `{package}`) |", "| --- | --- | --- |"]
    for listed in modules:
        summary = listed.summary.replace("|", "\\|")
        imports = ", ".join(short(module) for module in listed.imports) or "—"
        lines.append(f"| `{short(listed.module)}` | {summary} | {imports} |")
    return "\n".join(lines)


def rule_files(rule: Rule) -> dict[str, str]:
    """Where a rule lives and where its planted violations are, as paths from the project root."""
    stem = rule.check.__module__.rpartition(".")[2]
    return {
        "module": f"tools/clockless_tools/architecture/{stem}.py",
        "test": f"tests/architecture/test_{stem}.py",
    }


def rules_markdown(rules: Iterable[Rule]) -> str:
    """The rule registry as a Markdown table: id, what holds, the module and the test that plants violations."""
    lines = ["| rule | holds when | checked in | planted in |", "| --- | --- | --- | --- |"]
    for rule in rules:
        files = rule_files(rule)
        summary = rule.summary.replace("|", "\\|")
        module = files["module"].removeprefix("tools/clockless_tools/")
        lines.append(f"| `{rule.name}` | {summary} | `{module}` | `{files['test']}` |")
    return "\n".join(lines)
