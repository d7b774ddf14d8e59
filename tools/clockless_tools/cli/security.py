"""`clockless security`: checkov over the template, every finding explained by the skip list."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from clockless_tools.cli.common import CHECK, TemplateOption, fail, line_stdout
from clockless_tools.security.scan import CHECKOV, SKIPS, ScanError, judge, load_skips, run_checkov, skips_markdown
from clockless_tools.template.loader import DEFAULT_TEMPLATE

app = typer.Typer()


@app.command("security", rich_help_panel=CHECK)
def security(
    template: TemplateOption = DEFAULT_TEMPLATE,
    skips_file: Annotated[
        Path, typer.Option("--skips", help="The skip list: each accepted finding and why. E.g. --skips skips.yaml")
    ] = SKIPS,
    checkov: Annotated[
        Path, typer.Option("--checkov", help="The checkov executable. E.g. --checkov .venv-checkov/bin/checkov")
    ] = CHECKOV,
    markdown: Annotated[
        bool, typer.Option("--skips-markdown", help="Print the skip list as docs/security.md's table; scan nothing.")
    ] = False,
) -> None:
    """Scan the template with checkov; exit 1 on a finding the skip list does not explain, or a stale entry."""
    try:
        skips = load_skips(skips_file)
        if markdown:
            print(skips_markdown(skips))
            return
        verdict = judge(run_checkov(template, checkov), skips)
    except ScanError as error:
        raise fail(str(error)) from None
    for finding in verdict.unexplained:
        line_stdout.print(escape(f"unexplained: {finding.describe()}"))
    for skip in verdict.stale:
        scope = f" for {', '.join(skip.resources)}" if skip.resources else ""
        line_stdout.print(
            escape(f"stale skip: {skip.check}{scope} matches no finding; remove it from {skips_file.name}")
        )
    explained = len(verdict.findings) - len(verdict.unexplained)
    line_stdout.print(
        f"checkov: {verdict.passed} passed, {len(verdict.findings)} failed, {explained} of them explained by "
        f"{skips_file.name} ({len(skips)} entries)"
    )
    if not verdict.ok:
        line_stdout.print(f"fix the template, or add an entry with its reason to {skips_file.name}")
        raise typer.Exit(code=1)
