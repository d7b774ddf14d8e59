"""`clockless invoke`: one function invoked the way `sam local invoke` does, without Docker."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from clockless import format_scheduled_time, parse_scheduled_time
from clockless.ledger import STATUS_FAILED
from clockless_tools.cli.common import (
    RUN_LOCALLY,
    TemplateOption,
    fail,
    function_log,
    function_output,
    line_stderr,
    load_template,
    print_function_log,
    shown,
)
from clockless_tools.local.poller import DrainError, SqsPoller, describe_drain
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.server import running_endpoint
from clockless_tools.operations.targets import LocalTarget
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError
from clockless_tools.template.model import Template

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
    functions' logs in the --log file (its path on stderr), or on stderr with --verbose.

    Then the messages it sent to queues with an event source mapping are handed to their functions
    in this process (the workers of a fanned-out tick), until no message is visible; for a tick that
    fanned out, a second line on stdout says what the tick did (its ledger entry's summary). Exit 1
    when the function failed, its work is not all done, or the tick ended `failed`."""
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
    log_path = None if verbose else log_file
    with function_output(log_path):
        run = invoke_and_drain(runtime, function, payload, endpoint, drain=drain)
    if run.error is not None:
        print(json.dumps({"errorType": type(run.error).__name__, "errorMessage": str(run.error)}))
    else:
        print(json.dumps(run.result, default=str))
    tick = fanned_out_tick(tpl, endpoint, run.result) if drain and run.done else None
    if tick is not None:
        print(json.dumps(tick, default=str))
    for line in run.drained:
        line_stderr.print(f"drained {line}")
    if log_path is not None:
        print_function_log(shown(log_path))
    if run.refused is not None:
        raise fail(run.refused)
    if not run.done or (tick is not None and tick["status"] == STATUS_FAILED):
        # The function failed, the work the invoke started is not all done, or the tick ended failed.
        raise typer.Exit(code=1)


@dataclass
class Run:
    """What an invoke did, kept until the functions' output is no longer redirected to say it."""

    result: Any = None
    error: Exception | None = None
    drained: list[str] = field(default_factory=list)
    failed: bool = False
    refused: str | None = None

    @property
    def done(self) -> bool:
        return self.error is None and not self.failed and self.refused is None


def invoke_and_drain(runtime: LocalLambdaRuntime, function: str, payload: Any, endpoint: str, *, drain: bool) -> Run:
    run = Run()
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # the function's logs and metrics, like Lambda's log stream
    try:
        run.result = runtime.invoke(function, payload)
    except Exception as error:  # the function's own error, reported as Lambda reports it
        run.error = error
        return run
    finally:
        sys.stdout = real_stdout
    if drain:
        try:
            run.drained, run.failed = drain_queues(runtime, endpoint)
        except (DrainError, TemplateError) as error:
            run.refused = str(error)
    return run


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


def drain_queues(runtime: LocalLambdaRuntime, endpoint: str) -> tuple[list[str], bool]:
    """Run the workers until their queues have nothing visible: one line per queue, and whether a
    message failed. DrainError or TemplateError when the template's mappings cannot be drained."""
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        poller = SqsPoller(runtime, endpoint)
        invocations = poller.drain()
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
