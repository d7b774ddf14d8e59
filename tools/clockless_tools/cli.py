"""The `clockless` command: the local runtime and operations on template.yaml's jobs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from clockless_tools import arch_cli, ops_cli
from clockless_tools.schedules_cli import app as schedules_app
from clockless_tools.template import DEFAULT_TEMPLATE, Template, TemplateError

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
local_app = typer.Typer(no_args_is_help=True, help="The persistent embedded DynamoDB (moto's server on loopback).")
app.add_typer(local_app, name="local")
app.add_typer(schedules_app, name="schedules", help="UTC schedules checked against the operating time zones.")
ops_cli.register(app)
arch_cli.register(app)

stdout = Console()
stderr = Console(stderr=True)

TemplateOption = Annotated[Path, typer.Option("--template", "-t", help="The SAM template.")]


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def fail(message: str) -> typer.Exit:
    stderr.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code=2)


def load_template(path: Path) -> Template:
    try:
        return Template.load(path)
    except TemplateError as error:
        raise fail(str(error)) from None


@app.command()
def demo(
    template: TemplateOption = DEFAULT_TEMPLATE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run both jobs on a fresh embedded DynamoDB: each tick delivered 11 times, effects checked."""
    from clockless_tools.demo import default_log_path, run_demo

    tpl = load_template(template)
    started = time.monotonic()
    log_path = default_log_path()
    with log_path.open("w", encoding="utf-8") as log:
        reports = run_demo(tpl, function_output=log, progress=lambda m: stderr.print(f"[dim]{m}[/]"))
    elapsed = time.monotonic() - started
    ok = all(report.exactly_once for report in reports)
    if as_json:
        stdout.print_json(json.dumps({"ok": ok, "seconds": round(elapsed, 2), "jobs": [r.as_dict() for r in reports]}))
    else:
        table = Table(title="clockless demo: each job's tick delivered again and again")
        table.add_column("")
        for r in reports:
            table.add_column(r.job, justify="right")
        rows: list[tuple[str, list[str]]] = [
            ("scheduled time (UTC)", [r.scheduled_time for r in reports]),
            ("deliveries", [str(r.deliveries) for r in reports]),
            ("executions", [str(r.executions) for r in reports]),
            ("duplicates suppressed", [str(r.duplicates_suppressed) for r in reports]),
            ("failures", [str(r.failures) for r in reports]),
            ("effect", [r.effect_name for r in reports]),
            ("  expected from the seed", [str(r.effects_expected) for r in reports]),
            ("  observed in the tables", [str(r.effects_observed) for r in reports]),
            ("exactly once", ["[green]yes[/]" if r.exactly_once else "[bold red]NO[/]" for r in reports]),
        ]
        for label, cells in rows:
            table.add_row(label, *cells)
        stdout.print(table)
        stdout.print(f"function logs and metrics: {log_path}   ({elapsed:.1f} s)")
    if not ok:
        stderr.print("[bold red]a tick did not take effect exactly once[/]")
        raise typer.Exit(code=1)


@app.command()
def invoke(
    function: Annotated[str, typer.Argument(help="Logical id of the function in template.yaml.")],
    event: Annotated[Path, typer.Option("--event", "-e", help="JSON event file.")],
    template: TemplateOption = DEFAULT_TEMPLATE,
    endpoint: Annotated[str | None, typer.Option(help="DynamoDB endpoint (default: the running `local up`).")] = None,
) -> None:
    """Invoke a function the way `sam local invoke` does, without Docker. Response on stdout, logs on stderr."""
    from clockless_tools.localserver import running_endpoint
    from clockless_tools.runtime import LocalLambdaRuntime

    tpl = load_template(template)
    try:
        tpl.function(function)
    except TemplateError as error:
        raise fail(str(error)) from None
    payload = read_event(event)
    endpoint = endpoint or running_endpoint()
    if endpoint is None:
        raise fail("no embedded DynamoDB is running: start it with `make local-up` (or pass --endpoint)")
    runtime = LocalLambdaRuntime(tpl, endpoint)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # the function's logs and metrics, like Lambda's log stream
    try:
        result = runtime.invoke(function, payload)
    except Exception as error:  # the function's own error, reported as Lambda reports it
        sys.stdout = real_stdout
        print(json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}))
        raise typer.Exit(code=1) from None
    finally:
        sys.stdout = real_stdout
    print(json.dumps(result, default=str))


def read_event(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise fail(f"cannot read event file {path}: {error.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise fail(f"event file {path} is not valid JSON: {error.msg} at line {error.lineno}") from None


@local_app.command("up")
def local_up(
    template: TemplateOption = DEFAULT_TEMPLATE,
    port: Annotated[int, typer.Option(help="Loopback port.")] = 8765,
) -> None:
    """Start moto's server on loopback in the background and create the template's tables."""
    from clockless_tools.localserver import start_server

    tpl = load_template(template)
    state = start_server(tpl, port=port)
    stdout.print(f"embedded DynamoDB on {state['endpoint']} (pid {state['pid']}); tables: {', '.join(state['tables'])}")


@local_app.command("down")
def local_down() -> None:
    """Stop the embedded DynamoDB started by `local up`."""
    from clockless_tools.localserver import stop_server

    stdout.print("stopped" if stop_server() else "not running")


@local_app.command("status")
def local_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Whether the embedded DynamoDB runs, where, and its tables' item counts."""
    from clockless_tools.localserver import server_status

    status = server_status()
    if as_json:
        stdout.print_json(json.dumps(status))
    elif not status["running"]:
        stdout.print("not running")
    else:
        stdout.print(f"running on {status['endpoint']} (pid {status['pid']})")
        for table, count in status["tables"].items():
            stdout.print(f"  {table}: {count} items")


@local_app.command("seed")
def local_seed(
    template: TemplateOption = DEFAULT_TEMPLATE,
    tenants: Annotated[int, typer.Option(min=1)] = 3,
    programs: Annotated[int, typer.Option(min=0, help="Programs per tenant.")] = 40,
    sessions: Annotated[int, typer.Option(min=0, help="Sessions per tenant.")] = 60,
    seed: Annotated[int, typer.Option()] = 7,
) -> None:
    """Load demo programs and sessions into the running embedded DynamoDB."""
    from datetime import UTC, datetime

    from clockless_tools.local import local_environment, patched_environ
    from clockless_tools.localserver import running_endpoint
    from clockless_tools.seed import SeedPlan, plan_data
    from clockless_tools.seed import seed as seed_tables
    from clockless_tools.template import LocalNames

    load_template(template)
    endpoint = running_endpoint()
    if endpoint is None:
        raise fail("no embedded DynamoDB is running: start it with `make local-up`")
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    data = plan_data(SeedPlan(tenants, programs, sessions, seed), business_date=now.date(), now=now)
    names = LocalNames()
    with patched_environ(local_environment(endpoint)):
        seed_tables(
            data,
            programs_table=names.table_name("ProgramsTable"),
            windows_table=names.table_name("WindowsTable"),
            sessions_table=names.table_name("SessionsTable"),
        )
    stdout.print(
        f"seeded {len(data.active_programs) + len(data.ended_programs)} programs, {len(data.sessions)} sessions"
    )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
