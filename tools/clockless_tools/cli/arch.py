"""`clockless arch`: the architecture rules over template.yaml and the code, every violation at once."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Annotated

import typer
from rich.markup import escape

from clockless_tools.architecture import RULES, Project, check
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
) -> None:
    """Check the architecture rules; exit 1 if any is broken, printing each violation with its fix."""
    known = {r.name: r for r in RULES}
    unknown = sorted(set(rule or []) - set(known))
    if unknown:
        raise fail(f"unknown rule {', '.join(unknown)} (rules: {', '.join(known)})")
    selected = [known[name] for name in rule] if rule else list(RULES)
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
