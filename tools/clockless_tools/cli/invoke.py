"""`clockless invoke`: one function invoked the way `sam local invoke` does, without Docker."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from clockless_tools.cli.common import (
    RUN_LOCALLY,
    TemplateOption,
    fail,
    function_log,
    function_output,
    line_stderr,
    load_template,
    shown,
)
from clockless_tools.local.poller import DrainError, SqsPoller, describe_drain
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.server import running_endpoint
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError

app = typer.Typer()
INVOKE_LOG = function_log("invoke")


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
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Stream the functions' logs to stderr instead of the --log file.")
    ] = False,
    log_file: Annotated[
        Path,
        typer.Option("--log", help="Where the functions' logs and metrics go (appended). E.g. --log invoke.log"),
    ] = INVOKE_LOG,
) -> None:
    """Invoke a function the way `sam local invoke` does, without Docker. Response on stdout; the
    function's logs in the --log file (its path on stderr), or on stderr with --verbose.

    Then the messages it sent to queues with an event source mapping are handed to their functions
    in this process (the workers of a fanned-out tick), until no message is visible."""
    tpl = load_template(template)
    try:
        tpl.function(function)
    except TemplateError as refused:
        raise fail(str(refused)) from None
    payload = read_event(event)
    endpoint = endpoint or running_endpoint()
    if endpoint is None:
        raise fail("no embedded DynamoDB is running: start it with `make local-up` (or pass --endpoint)")
    runtime = LocalLambdaRuntime(tpl, endpoint)
    log_path = None if verbose else log_file
    function_error: Exception | None = None
    drained: list[str] = []
    failed = False
    with function_output(log_path):
        real_stdout = sys.stdout
        sys.stdout = sys.stderr  # the function's logs and metrics, like Lambda's log stream
        try:
            result = runtime.invoke(function, payload)
        except Exception as failure:  # the function's own error, reported as Lambda reports it
            function_error = failure
        finally:
            sys.stdout = real_stdout
        if function_error is None and drain:
            drained, failed = drain_queues(runtime, endpoint)
    if function_error is not None:
        print(json.dumps({"errorType": type(function_error).__name__, "errorMessage": str(function_error)}))
    else:
        print(json.dumps(result, default=str))
    for line in drained:
        line_stderr.print(f"drained {line}")
    if log_path is not None:
        line_stderr.print(f"function logs and metrics: {shown(log_path)}")
    if function_error is not None or failed:
        raise typer.Exit(code=1)  # the function failed, or the work the invoke started is not all done


def drain_queues(runtime: LocalLambdaRuntime, endpoint: str) -> tuple[list[str], bool]:
    """Run the workers until their queues have nothing visible: one line per queue, and whether a
    message failed."""
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        poller = SqsPoller(runtime, endpoint)
        invocations = poller.drain()
    except (DrainError, TemplateError) as error:
        raise fail(str(error)) from None
    finally:
        sys.stdout = real_stdout
    return describe_drain(invocations, poller), any(invocation.failed for invocation in invocations)


def read_event(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise fail(f"cannot read event file {path}: {error.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise fail(f"event file {path} is not valid JSON: {error.msg} at line {error.lineno}") from None
