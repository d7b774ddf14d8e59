"""`clockless local up|down|status|seed`: the persistent embedded DynamoDB (moto's server on loopback)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from clockless_tools.cli.common import TemplateOption, fail, load_template, stdout
from clockless_tools.local.dynamodb import local_environment, patched_environ
from clockless_tools.local.seed import SeedPlan, seed_demo_tables
from clockless_tools.local.server import running_endpoint, server_status, start_server, stop_server
from clockless_tools.template.loader import DEFAULT_TEMPLATE

app = typer.Typer(no_args_is_help=True, help=__doc__)


@app.command("up")
def local_up(
    template: TemplateOption = DEFAULT_TEMPLATE,
    port: Annotated[int, typer.Option(help="Loopback port.")] = 8765,
) -> None:
    """Start moto's server on loopback in the background and create the template's tables."""
    tpl = load_template(template)
    state = start_server(tpl, port=port)
    stdout.print(f"embedded DynamoDB on {state['endpoint']} (pid {state['pid']}); tables: {', '.join(state['tables'])}")


@app.command("down")
def local_down() -> None:
    """Stop the embedded DynamoDB started by `local up`."""
    stdout.print("stopped" if stop_server() else "not running")


@app.command("status")
def local_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Whether the embedded DynamoDB runs, where, and its tables' item counts."""
    status = server_status()
    if as_json:
        stdout.print_json(json.dumps(status))
    elif not status["running"]:
        stdout.print("not running")
    else:
        stdout.print(f"running on {status['endpoint']} (pid {status['pid']})")
        for table, count in status["tables"].items():
            stdout.print(f"  {table}: {count} items")


@app.command("seed")
def local_seed(
    template: TemplateOption = DEFAULT_TEMPLATE,
    tenants: Annotated[int, typer.Option(min=1)] = 3,
    programs: Annotated[int, typer.Option(min=0, help="Programs per tenant.")] = 40,
    sessions: Annotated[int, typer.Option(min=0, help="Sessions per tenant.")] = 60,
    seed: Annotated[int, typer.Option()] = 7,
) -> None:
    """Load demo programs and sessions into the running embedded DynamoDB."""
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
