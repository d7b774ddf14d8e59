"""`clockless invoke`: the Docker-free twin of `sam local invoke`, against moto's server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from tests.conftest import EVENTS, PROJECT_ROOT
from tests.integration.conftest import scan_all
from tests.jobs import fanned_out

# A fanned-out job of the template: invoke drains its work queue through its worker.
JOB = fanned_out()[0]
TICK = JOB.sample()["scheduled_time"]


def table_contents(client: Any) -> dict[str, list[dict[str, Any]]]:
    return {table: scan_all(client, table) for table in client.list_tables()["TableNames"]}


def test_invoke_prints_the_response_on_stdout_and_the_logs_in_a_file_or_with_verbose_on_stderr(
    tables: Any, local_queues: Any, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    # Given the embedded DynamoDB with the template's tables and queues
    command = [sys.executable, "-m", "clockless_tools.cli.app", "invoke", JOB.function_id]
    command += ["-e", str(EVENTS / JOB.tick_sample), "--endpoint", dynamodb_endpoint]
    log = tmp_path / "invoke.log"

    # When the sample tick is invoked twice, in a fresh process each time, as a user would: first
    # with its logs in a file (the default, moved by --log), then streamed with --verbose
    first = subprocess.run(
        [*command, "--log", str(log)], capture_output=True, text=True, check=False, cwd=PROJECT_ROOT, timeout=60
    )
    again = subprocess.run(
        [*command, "--verbose"], capture_output=True, text=True, check=False, cwd=PROJECT_ROOT, timeout=60
    )

    # Then stdout is the handler's response, then (the tick fanned out) what the tick did once its
    # workers were done; the function's and the workers' logs went to the file, and stderr says where
    assert first.returncode == 0, first.stderr
    response_line, tick_line = first.stdout.splitlines()
    response = json.loads(response_line)
    assert response["outcome"] == "executed"
    assert response["scheduled_time"] == TICK
    assert "tick executed" not in first.stderr
    assert first.stderr.splitlines()[-1] == f"function logs and metrics: {log}"
    written = log.read_text(encoding="utf-8")
    assert '"message":"tick executed"' in written
    assert '"TickSucceeded":[1.0]' in written  # the finisher's metric: a worker's output, not the coordinator's
    # With --verbose the logs are on stderr and no file is named
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[0])["outcome"] == "duplicate"
    assert '"DuplicateSuppressed":[1.0]' in again.stderr
    assert "function logs and metrics" not in again.stderr
    assert log.read_text(encoding="utf-8") == written
    # The coordinator fanned out and the workers ran to the end of every partition: the tick succeeded.
    assert (
        f"drained {JOB.stem}WorkQueue -> {JOB.worker_id}: {JOB.shards} message(s) in {JOB.shards} invocation(s), "
        "all done" in first.stderr
    )
    ledger = scan_all(tables, "LedgerTable")
    (entry,) = [item for item in ledger if item["job"]["S"] == JOB.name]
    assert entry["status"]["S"] == "succeeded"
    assert entry["partitions_done"]["N"] == entry["partitions_total"]["N"] == str(JOB.shards)
    assert json.loads(tick_line) == {
        "tick": f"{JOB.name}@{TICK}",
        "status": "succeeded",
        "partitions_done": JOB.shards,
        "partitions_total": JOB.shards,
        "summary": json.loads(entry["summary"]["S"]),
    }
    assert {"found", "applied", "already_done", "failed"} <= set(json.loads(tick_line)["summary"])
    assert again.stdout.splitlines()[1] == tick_line  # the duplicate's tick is the same tick


def test_a_malformed_event_is_answered_like_lambda_with_exit_code_1(
    tables: Any, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    before = table_contents(tables)
    log = tmp_path / "invoke.log"

    event = EVENTS / JOB.package / "malformed.json"

    result = CliRunner().invoke(
        app,
        ["invoke", JOB.function_id, "-e", str(event), "--endpoint", dynamodb_endpoint, "--log", str(log)],
    )

    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == f"function logs and metrics: {log}"
    error = json.loads(result.stdout)
    assert error["errorType"] == "MalformedTickError"
    assert "scheduled_time" in error["errorMessage"]
    assert table_contents(tables) == before


def _invalid_json(tmp_path: Path) -> Path:
    path = tmp_path / "a-deliberately-long-folder-name-so-the-message-is-wider-than-a-terminal" / "broken.json"
    path.parent.mkdir()
    path.write_text(f'{{"job": "{JOB.name}",', encoding="utf-8")
    return path


BAD_INPUTS: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "unknown-function": ("NoSuchFunction", lambda _tmp: EVENTS / JOB.tick_sample),
    "missing-file": (JOB.function_id, lambda tmp: tmp / "missing.json"),
    "invalid-json": (JOB.function_id, _invalid_json),
}
PROBLEMS = {
    "unknown-function": "unknown function 'NoSuchFunction'",
    "missing-file": "cannot read event file",
    "invalid-json": "is not valid JSON",
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_gets_one_line_exit_code_2_and_changes_nothing(
    tables: Any, dynamodb_endpoint: str, tmp_path: Path, case: str
) -> None:
    function, event = BAD_INPUTS[case]
    before = table_contents(tables)

    result = CliRunner().invoke(app, ["invoke", function, "-e", str(event(tmp_path)), "--endpoint", dynamodb_endpoint])

    assert result.exit_code == 2
    assert PROBLEMS[case] in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stdout == ""
    assert table_contents(tables) == before
