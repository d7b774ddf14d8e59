"""`clockless local up|down|status|seed`: the embedded DynamoDB in the background (moto's server, in memory)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from clockless_tools.cli.common import TemplateOption, fail, flag, line_stdout, load_template, parse_time, stdout
from clockless_tools.local.dynamodb import local_environment, patched_environ
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.seed import DEMO_MODULE, SeedPlan, describe, seed_jobs
from clockless_tools.local.server import (
    LocalServerError,
    running_endpoint,
    server_status,
    start_server,
    stop_server,
)
from clockless_tools.simulate.tables import job_tables
from clockless_tools.template.loader import DEFAULT_TEMPLATE

app = typer.Typer(no_args_is_help=True, help=__doc__)


@app.command("up")
def local_up(
    template: TemplateOption = DEFAULT_TEMPLATE,
    port: Annotated[
        int,
        typer.Option(
            min=1, max=65535, envvar="CLOCKLESS_LOCAL_PORT", help="Loopback port to listen on. E.g. --port 8766"
        ),
    ] = 8765,
    host: Annotated[
        str,
        typer.Option(
            envvar="CLOCKLESS_LOCAL_HOST",
            help="Address to listen on: loopback by default; the container bridge's gateway for `sam local` on "
            "Linux (`clockless engine gateway` prints it). E.g. --host 172.17.0.1",
        ),
    ] = "127.0.0.1",
) -> None:
    """Start moto's server in the background (on loopback unless --host) and create the template's tables and queues."""
    tpl = load_template(template)
    try:
        state = start_server(tpl, port=port, host=host, port_option=flag("--port"))
    except LocalServerError as error:
        raise fail(str(error)) from None
    line_stdout.print(
        f"embedded DynamoDB on {state['endpoint']}{'' if host == '127.0.0.1' else f' (listening on {host})'} "
        f"(pid {state['pid']}); tables: {', '.join(state['tables'])}"
    )


@app.command("down")
def local_down() -> None:
    """Stop the embedded DynamoDB started by `local up` (only a process proven to be that server)."""
    line_stdout.print(stop_server())


@app.command("status")
def local_status(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of text, for scripts. E.g. --json")
    ] = False,
) -> None:
    """Whether the embedded DynamoDB runs, where, its tables' item counts and its queues' messages."""
    status = server_status()
    if as_json:
        print(json.dumps(status, indent=2))
    elif "stale" in status:
        line_stdout.print(f"not running: {status['stale']}")
    elif not status["running"]:
        line_stdout.print("not running")
    else:
        stdout.print(f"running on {status['endpoint']} (pid {status['pid']})")
        for table, count in status["tables"].items():
            stdout.print(f"  {table}: {count} items")
        for queue, depth in status["queues"].items():
            stdout.print(f"  {queue}: {depth['visible']} messages waiting, {depth['in_flight']} in flight")


@app.command("seed")
def local_seed(
    template: TemplateOption = DEFAULT_TEMPLATE,
    tenants: Annotated[int, typer.Option(min=1, help="Tenants to create. E.g. --tenants 5")] = 3,
    seed: Annotated[int, typer.Option(help="Random seed, for the same data every time. E.g. --seed 42")] = 7,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            help="Seed as of this UTC time (sessions started in the 48 h before it; its date is the business "
            "date) instead of now: the same data whenever it runs. E.g. --now 2026-11-29T10:00:00Z",
        ),
    ] = None,
) -> None:
    """Load each job's demo data (its functions/<job>/<job>/demo.py) into the running embedded DynamoDB."""
    tpl = load_template(template)
    at = parse_time(now, "--now") if now else datetime.now(UTC).replace(second=0, microsecond=0)
    endpoint = running_endpoint()
    if endpoint is None:
        raise fail("no embedded DynamoDB is running: start it with `make local-up`")
    plan = SeedPlan(tenants, seed)
    with patched_environ(local_environment(endpoint)):
        seeded = seed_jobs(LocalLambdaRuntime(tpl, endpoint), plan, start=at, end=at)
    for job in seeded:
        # A job whose effects land in no table of its own (the tick reaper) has nothing to seed.
        if job.summary is None and job_tables(tpl, job.function_id):
            line_stdout.print(f"{job.job}: no demo data ({job.function_id}'s package has no {DEMO_MODULE}.py)")
    summary = describe(seeded, plan)
    if summary is None:
        raise fail(f"no job of {template} has a {DEMO_MODULE}.py beside its handler, so there is nothing to seed")
    stdout.print(f"seeded {summary}")
