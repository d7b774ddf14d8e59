"""`clockless work show|redrive <job>`: a fanned-out job's work dead-letter queue, on the local runtime
or a deployed stack; `clockless work states`: the state machine its records go through."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from clockless_tools.cli.common import (
    EXIT_PARTITIONS_FAILING,
    JsonOption,
    function_log,
    function_output,
    line_stdout,
    print_function_log,
    shown,
    stdout,
)
from clockless_tools.cli.operations import JobArgument, VerboseOption
from clockless_tools.cli.target import TargetOptions, acting_on, target_options
from clockless_tools.operations.states import states_markdown
from clockless_tools.operations.targets import LocalTarget, PartitionsFailing, one_line
from clockless_tools.operations.work import DeadLetter, redrive, show

app = typer.Typer(no_args_is_help=True, help=__doc__.splitlines()[0])


def _sent(letter: DeadLetter) -> str:
    return datetime.fromtimestamp(letter.sent_at_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


MessagesOption = Annotated[
    bool,
    typer.Option(
        "--messages",
        help="Read every message's body too. SQS has no peek: each receive raises the message's receive count "
        "by one (receives shows the count before this read).",
    ),
]


@app.command("states")
def work_states() -> None:
    """The fan-out's partition and tick states and the conditional write that moves each, as Mermaid
    diagrams and a Markdown table (docs/fan-out.md), from clockless.state."""
    print(states_markdown())


@app.command("show")
@target_options
def work_show(
    job: JobArgument,
    as_json: JsonOption = False,
    messages: MessagesOption = False,
    *,
    where: TargetOptions,
) -> None:
    """The job's work queue depth, its dead-letter queue's, and the dead-lettered partitions the ledger names
    (nothing is received: looking changes nothing).

    Exit 1 when the dead-letter queue holds messages: items that were not applied."""
    tpl, target = where.open()
    with acting_on(target):
        found = show(target, tpl, job, now=datetime.now(UTC), messages=messages)
    if as_json:
        print(json.dumps({"target": target.description, **found.as_dict()}, indent=2))
    else:
        queues = found.queues
        line_stdout.print(
            f"{job} on {target.description}: {queues.queue} has {found.visible} message(s) waiting and "
            f"{found.in_flight} in flight (worker {queues.worker}); {queues.dead_letter_queue} has "
            f"{found.dead_letter_messages} message(s)"
        )
        if found.read_messages:
            line_stdout.print(
                f"read by receiving {len(found.dead_letters)} message(s) (SQS has no peek): each one's receive "
                "count rose by one; receives shows it before this read"
            )
        elif found.dead_letter_messages:
            line_stdout.print(
                f"the ledger names {len(found.dead_letters)} dead-lettered partition(s); items' messages are "
                "listed per tick by clockless status; --messages reads every body (raising its receive count)"
            )
        if found.dead_letters:
            table = Table()
            for column in ("sent", "kind", "tick", "partition", "items", "receives", "error"):
                table.add_column(column, no_wrap=column != "error")
            for letter in found.dead_letters:
                table.add_row(
                    _sent(letter) if found.read_messages else "-",
                    letter.kind,
                    letter.scheduled_time or "-",
                    letter.partition or "-",
                    "-" if letter.items is None else str(letter.items),
                    str(letter.receive_count),
                    letter.error or "-",
                )
            stdout.print(table)
        if found.dead_letter_messages:
            line_stdout.print(f"replay them: clockless work redrive {job}")
    if found.dead_letter_messages:
        raise typer.Exit(code=1)


REDRIVE_LOG = function_log("work-redrive")


@app.command("redrive")
@target_options
def work_redrive(
    job: JobArgument,
    verbose: VerboseOption = False,
    log_file: Annotated[
        Path,
        typer.Option(
            "--log",
            help="Where the workers' logs and metrics go on the local runtime (appended). E.g. --log redrive.log",
        ),
    ] = REDRIVE_LOG,
    as_json: JsonOption = False,
    *,
    where: TargetOptions,
) -> None:
    """Move every message of the job's work dead-letter queue back to its work queue, to be applied once.

    On the local runtime the job's workers then run at once, as Lambda's poller would run them (other
    jobs' queues are left alone). Exit 3 when redriven messages failed again (the cause is not fixed
    yet): they are back on the work queue, and on the dead-letter queue after its receives."""
    tpl, target = where.open()
    log_path = None if verbose or not isinstance(target, LocalTarget) else log_file
    failed_again: PartitionsFailing | None = None
    with acting_on(target), function_output(log_path):
        result = redrive(target, tpl, job)
        try:
            drained = target.drain(job) if result.moved else []
        except PartitionsFailing as failing:
            failed_again, drained = failing, failing.drained
    log = None if log_path is None or not result.moved else shown(log_path)
    if as_json:
        again = None if failed_again is None else {"function": failed_again.function_id, "failed": failed_again.failed}
        body = {"target": target.description, **result.as_dict(), "drained": drained, "failed_again": again}
        print(json.dumps({**body, "function_log": log}, indent=2))
    else:
        queues = result.queues
        moved = (
            f"{job}: moved {len(result.moved)} message(s) from {queues.dead_letter_queue} to {queues.queue} "
            f"on {target.description}"
        )
        if failed_again is not None:
            why = f": {one_line(failed_again.error, 120)}" if failed_again.error else ""
            moved += (
                f"; {failed_again.failed} of them failed again ({failed_again.function_id}{why}): the cause is not "
                f"fixed yet; they come back after the kit's backoff and rest in {queues.dead_letter_queue} after "
                f"{queues.max_receive_count} receives; `clockless status` shows each partition"
            )
        line_stdout.print(escape(moved))
        if failed_again is None:
            for line in drained:
                line_stdout.print(escape(f"drained {line}"))
        if result.not_deleted:
            line_stdout.print(
                f"{len(result.not_deleted)} of them could not be deleted from {queues.dead_letter_queue} and are "
                "in both queues: harmless (each item is applied once); run the redrive again to clear them"
            )
    if log is not None:
        print_function_log(log)
    if failed_again is not None:
        raise typer.Exit(code=EXIT_PARTITIONS_FAILING)
