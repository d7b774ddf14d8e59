"""The `clockless` command: the local runtime and operations on template.yaml's jobs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from clockless_tools.cli import arch as arch_cli
from clockless_tools.cli import bench as bench_cli
from clockless_tools.cli import operations as ops_cli
from clockless_tools.cli import simulate as simulate_cli
from clockless_tools.cli.schedules import app as schedules_app
from clockless_tools.template.model import DEFAULT_TEMPLATE, Template, TemplateError

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
local_app = typer.Typer(no_args_is_help=True, help="The persistent embedded DynamoDB (moto's server on loopback).")
app.add_typer(local_app, name="local")
app.add_typer(schedules_app, name="schedules", help="UTC schedules checked against the operating time zones.")
ops_cli.register(app)
arch_cli.register(app)
simulate_cli.register(app)
bench_cli.register(app)

stdout = Console()
stderr = Console(stderr=True)

TemplateOption = Annotated[Path, typer.Option("--template", "-t", help="The SAM template.")]


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def fail(message: str) -> typer.Exit:
    # One line however long (no wrapping), and the message printed as written (no markup).
    stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def load_template(path: Path) -> Template:
    try:
        return Template.load(path)
    except TemplateError as error:
        raise fail(str(error)) from None


@app.command()
def invoke(
    function: Annotated[str, typer.Argument(help="Logical id of the function in template.yaml.")],
    event: Annotated[Path, typer.Option("--event", "-e", help="JSON event file.")],
    template: TemplateOption = DEFAULT_TEMPLATE,
    endpoint: Annotated[str | None, typer.Option(help="DynamoDB endpoint (default: the running `local up`).")] = None,
) -> None:
    """Invoke a function the way `sam local invoke` does, without Docker. Response on stdout, logs on stderr."""
    from clockless_tools.local.runtime import LocalLambdaRuntime
    from clockless_tools.local.server import running_endpoint

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
    from clockless_tools.local.server import start_server

    tpl = load_template(template)
    state = start_server(tpl, port=port)
    stdout.print(f"embedded DynamoDB on {state['endpoint']} (pid {state['pid']}); tables: {', '.join(state['tables'])}")


@local_app.command("down")
def local_down() -> None:
    """Stop the embedded DynamoDB started by `local up`."""
    from clockless_tools.local.server import stop_server

    stdout.print("stopped" if stop_server() else "not running")


@local_app.command("status")
def local_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Whether the embedded DynamoDB runs, where, and its tables' item counts."""
    from clockless_tools.local.server import server_status

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

    from clockless_tools.local.dynamodb import local_environment, patched_environ
    from clockless_tools.local.seed import SeedPlan, seed_demo_tables
    from clockless_tools.local.server import running_endpoint

    tpl = load_template(template)
    endpoint = running_endpoint()
    if endpoint is None:
        raise fail("no embedded DynamoDB is running: start it with `make local-up`")
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    with patched_environ(local_environment(endpoint)):
        seeded = seed_demo_tables(tpl, SeedPlan(tenants, programs, sessions, seed), business_date=now.date(), now=now)
    if seeded is None:
        raise fail(f"{template} declares none of the demo tables, so there is nothing to seed")
    stdout.print(f"seeded {seeded}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
