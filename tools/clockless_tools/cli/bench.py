"""`clockless bench run|show|measure|timings|requests`: what a tick costs, measured beside a baseline
(what `make bench` runs); how long `make run` and `make test` take (what `make measure` runs); the
requests each delivery sends, the one table the tests count against."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from clockless_tools.bench import requests as request_counts
from clockless_tools.bench.measure import (
    COMMANDS,
    MEASURED,
    MeasureError,
    markdown_table,
    measure,
    readme_sentence,
    write,
)
from clockless_tools.bench.results import FULL, QUICK, BenchError, BenchSizes
from clockless_tools.bench.run import SECTIONS, run_bench
from clockless_tools.cli.common import JsonOption, TemplateOption, fail, load_template, writable
from clockless_tools.cli.common import line_stderr as stderr
from clockless_tools.cli.common import line_stdout as stdout
from clockless_tools.template.loader import DEFAULT_TEMPLATE

DEFAULT_RESULTS = Path("bench") / "results.json"

app = typer.Typer(no_args_is_help=True, help=__doc__)


def _check_sizes(sizes: BenchSizes, items: int | None, one_tenant: int | None, scale: float | None) -> BenchSizes:
    """The sizes, with the capacity check's overridden where asked."""
    return dataclasses.replace(
        sizes,
        check_items=sizes.check_items if items is None else items,
        check_one_tenant_items=sizes.check_one_tenant_items if one_tenant is None else one_tenant,
        check_scale=sizes.check_scale if scale is None else scale,
    )


@app.command("run")
def run(
    template: TemplateOption = DEFAULT_TEMPLATE,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the results. E.g. -o bench/results.json")
    ] = DEFAULT_RESULTS,
    quick: Annotated[bool, typer.Option("--quick", help="Tiny sizes, no sam build: checks the machinery.")] = False,
    sam: Annotated[
        Path, typer.Option(help="SAM CLI for the artifact measurements. E.g. --sam .venv-sam/bin/sam")
    ] = Path(".venv-sam/bin/sam"),
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a target is missed.")] = False,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="Measure only these sections (repeatable): overhead, scale, throughput, artifacts, cold_start; "
            "the results then go to bench/partial-results.tmp unless --output says otherwise. E.g. --only cold_start",
        ),
    ] = None,
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="With --only: replace those sections in the --output file (default bench/results.json), "
            "keeping the others. E.g. --only batching --merge",
        ),
    ] = False,
    check_items: Annotated[
        int | None,
        typer.Option(
            min=16, help="The capacity check's spread items per scenario (default 1,200). E.g. --check-items 20000"
        ),
    ] = None,
    check_one_tenant_items: Annotated[
        int | None,
        typer.Option(min=1, help="Its single-tenant items (default 240). E.g. --check-one-tenant-items 4000"),
    ] = None,
    check_scale: Annotated[
        float | None,
        typer.Option(min=1, help="Its divisor of every DynamoDB limit (default 100). E.g. --check-scale 50"),
    ] = None,
) -> None:
    """Measure kit overhead, cost per tick as tables grow, throughput, cold start and artifact size."""
    if merge and not only:
        raise fail("--merge replaces the sections --only names; without --only, run the whole bench")
    if merge and not output.exists():
        raise fail(f"--merge: {output} does not exist; run the whole bench first (make bench)")
    if only and output == DEFAULT_RESULTS and not merge:
        # A partial run never overwrites the full results the README quotes.
        output = Path("bench") / "partial-results.tmp"
    writable(output, "--output")  # before minutes of measuring, not after
    tpl = load_template(template)
    log_path = Path(".clockless") / "bench-function-output.log"
    log_path.parent.mkdir(exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        try:
            results = run_bench(
                tpl,
                sizes=_check_sizes(QUICK if quick else FULL, check_items, check_one_tenant_items, check_scale),
                sam=sam,
                function_output=log,
                progress=lambda message: stderr.print(f"[dim]{escape(message)}[/]"),
                only=tuple(only) if only else SECTIONS,
            )
        except BenchError as error:
            stderr.print(f"[bold red]bench failed:[/] {escape(str(error))}")
            raise typer.Exit(code=1) from None
    if merge:
        try:
            previous = json.loads(output.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise fail(f"cannot read {output} to merge into: {error}") from None
        document = results.merged_into(previous, SECTIONS)
        output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    else:
        results.write(output)
        document = results.as_dict()
    stdout.print(figures_table(document))
    missed = [key for key, figure in document["figures"].items() if figure["met"] is False]
    stdout.print(
        f"{len(document['figures'])} figures, {len(missed)} target(s) missed; written to {output} "
        f"({document['environment']['seconds']} s; function logs in {log_path})"
    )
    if strict and missed:
        raise typer.Exit(code=1)


@app.command("show")
def show(
    results: Annotated[Path, typer.Argument(help="A results file written by `clockless bench run`.")] = DEFAULT_RESULTS,
    markdown: Annotated[bool, typer.Option("--markdown", help="A Markdown table (docs/performance.md).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Print a results file as the table `run` prints, or as Markdown."""
    try:
        document = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise fail(f"cannot read {results}: {error}") from None
    if as_json:
        print(json.dumps(document, indent=2))
    elif markdown:
        print(figures_markdown(document))
    else:
        stdout.print(figures_table(document))


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit in ("requests",) and float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}".rstrip("0").rstrip(".") if not float(value).is_integer() else f"{int(value):,}"


def _quantity(value: float, unit: str) -> str:
    number = _number(value, unit)
    return f"{number} {unit.removesuffix('s') if number == '1' and unit == 'requests' else unit}"


def _rows(document: dict[str, Any]) -> list[tuple[str, str, str, str, str, bool | None]]:
    rows = []
    for figure in document["figures"].values():
        unit = figure["unit"]
        value = _quantity(figure["value"], unit)
        baseline = (
            "-" if figure["baseline"] is None else f"{_quantity(figure['baseline'], unit)} ({figure['baseline_label']})"
        )
        ratio = "-" if figure["ratio"] is None else f"{figure['ratio']:.2f}x"
        target = figure["target"]
        if "ratio_interval" in figure:
            # A timing: its median ratio over rounds with the 95 % interval, judged only when clear.
            low, high = figure["ratio_interval"]
            ratio += f" ({low:.2f}-{high:.2f}, n={figure['samples']})"
            if figure["met"] is None and target:
                target += ": undecided, the interval straddles it"
        rows.append((figure["label"], value, baseline, ratio, target, figure["met"]))
    return rows


def figures_table(document: dict[str, Any]) -> Table:
    table = Table(title="clockless bench: every figure beside its baseline from the same run")
    for column in ("figure", "value", "baseline", "ratio", "target"):
        table.add_column(column, justify="right" if column in ("value", "ratio") else "left")
    for label, value, baseline, ratio, target, met in _rows(document):
        verdict = (
            (f"[yellow]{escape(target)}[/]" if "undecided" in target else "")
            if met is None
            else (f"[green]{escape(target)} ✓[/]" if met else f"[bold red]{escape(target)} ✗[/]")
        )
        table.add_row(escape(label), value, escape(baseline), ratio, verdict)
    return table


def figures_markdown(document: dict[str, Any]) -> str:
    lines = ["| figure | value | baseline | ratio | target |", "| --- | ---: | --- | ---: | --- |"]
    for label, value, baseline, ratio, target, met in _rows(document):
        verdict = (
            (target if "undecided" in target else "") if met is None else f"{target} {'met' if met else '**missed**'}"
        )
        lines.append(f"| {label} | {value} | {baseline} | {ratio} | {verdict} |")
    return "\n".join(lines)


@app.command("measure")
def measure_command(
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Measure only these commands (repeatable): run, test. E.g. --only run"),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the figures. E.g. -o /tmp/measured.json")
    ] = MEASURED,
) -> None:
    """Time `make run` and `make test` as a reader runs them (wall, CPU, tests, cores, load) into
    bench/measured.json, which the docs' timing figures are generated from (`make docs`)."""
    names = tuple(only) if only else tuple(COMMANDS)
    unknown = sorted(set(names) - set(COMMANDS))
    if unknown:
        raise fail(f"--only {', '.join(unknown)}: not a measured command; the commands are {', '.join(COMMANDS)}")
    writable(output, "--output")
    try:
        document = measure(names)
    except MeasureError as error:
        stderr.print(f"[bold red]measure failed:[/] {escape(str(error))}")
        raise typer.Exit(code=1) from None
    write(document, output)
    stdout.print(readme_sentence(document))
    stdout.print(f"written to {output}; `make docs` puts the figures in README.md and docs/development.md")


@app.command("timings")
def timings_command(
    readme: Annotated[bool, typer.Option("--readme", help="The README's one line instead of the table.")] = False,
    measured: Annotated[
        Path, typer.Option("--measured", help="The figures file. E.g. --measured bench/measured.json")
    ] = MEASURED,
) -> None:
    """The measured timings (`make measure`) as docs/development.md's table, or the README's line."""
    try:
        document = json.loads(measured.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise fail(f"cannot read {measured}: {error}; run `make measure`") from None
    print(readme_sentence(document) if readme else markdown_table(document))


@app.command("requests")
def requests_command(template: TemplateOption = DEFAULT_TEMPLATE) -> None:
    """The AWS requests each delivery sends, by operation, as a Markdown table
    (docs/tick-flow.md#requests-per-delivery): the counts the integration tests hold the kit to."""
    print(request_counts.markdown(load_template(template)))
