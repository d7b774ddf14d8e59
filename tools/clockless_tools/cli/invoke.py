"""`clockless invoke`: one function invoked the way `sam local invoke` does, without Docker."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from clockless import format_scheduled_time, parse_scheduled_time
from clockless_tools.cli.common import RUN_LOCALLY, TemplateOption, fail, line_stderr, load_template
from clockless_tools.local.poller import DrainError, SqsPoller, describe_drain
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.server import running_endpoint
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError
from clockless_tools.template.model import Template

app = typer.Typer()


@app.command(rich_help_panel=RUN_LOCALLY)
def invoke(
    function: Annotated[str, typer.Argument(help="Logical id of the function in template.yaml.")],
    event: Annotated[
        Path, typer.Option("--event", "-e", help="JSON event file. E.g. -e events/session_cleanup/tick.json")
    ],
    template: TemplateOption = DEFAULT_TEMPLATE,
    endpoint: Annotated[
        str | None,
        typer.Option(help="DynamoDB endpoint (default: the running `local up`). E.g. --endpoint http://127.0.0.1:8765"),
    ] = None,
    drain: Annotated[
        bool,
        typer.Option(
            "--drain/--no-drain",
            help="Then drain the template's SQS event source mappings into their functions, as Lambda's poller "
            "would (a fanned-out tick's workers run to completion). E.g. --no-drain",
        ),
    ] = True,
) -> None:
    """Invoke a function the way `sam local invoke` does, without Docker. Response on stdout, logs on stderr.

    Then the messages it sent to queues with an event source mapping are handed to their functions
    in this process (the workers of a fanned-out tick), until no message is visible; for a tick that
    fanned out, a second line on stdout says what the tick did (its ledger entry's summary)."""
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
    if drain:
        drain_queues(runtime, endpoint)
        tick = fanned_out_tick(tpl, endpoint, result)
        if tick is not None:
            print(json.dumps(tick, default=str))


def fanned_out_tick(template: Template, endpoint: str, result: Any) -> dict[str, Any] | None:
    """For a coordinator's answer that fanned the tick out: what the tick did once its workers are
    done, as its ledger entry says (status, partitions, and the summary the finisher wrote: items
    found, applied, already done, failed). The coordinator's own answer cannot say it; it returns
    before the workers start. None for any other answer."""
    summary = result.get("summary") if isinstance(result, Mapping) else None
    if not isinstance(summary, Mapping) or "fan_out" not in summary:
        return None
    job, scheduled_time = str(result.get("job")), parse_scheduled_time(str(result.get("scheduled_time")))
    entries = (
        LocalTarget(template, endpoint).ledger().entries(job, scheduled_time, scheduled_time + timedelta(seconds=1))
    )
    if not entries:
        return None
    entry = entries[0]
    return {
        "tick": f"{job}@{format_scheduled_time(scheduled_time)}",
        "status": entry.status,
        "partitions_done": entry.partitions_done,
        "partitions_total": entry.partitions_total,
        "summary": entry.summary,
    }


def drain_queues(runtime: LocalLambdaRuntime, endpoint: str) -> None:
    """Run the workers until their queues have nothing visible; one line per queue on stderr."""
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        poller = SqsPoller(runtime, endpoint)
        invocations = poller.drain()
    except (DrainError, TemplateError) as error:
        raise fail(str(error)) from None
    finally:
        sys.stdout = real_stdout
    for line in describe_drain(invocations, poller):
        line_stderr.print(f"drained {line}")
    if any(invocation.failed for invocation in invocations):
        raise typer.Exit(code=1)  # the work the invoke started is not all done


def read_event(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise fail(f"cannot read event file {path}: {error.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise fail(f"event file {path} is not valid JSON: {error.msg} at line {error.lineno}") from None
