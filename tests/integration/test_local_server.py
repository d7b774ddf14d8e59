"""`clockless local`: `down` signals only a process proven to be its own server, `status` reports a
stale state file in one line, and `up` refuses a second server on another port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.local import server
from clockless_tools.template.model import Template


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def state_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(server, "STATE_FILE", tmp_path / "local.json")
    return tmp_path / "local.json"


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process: what a stale state file's PID may name after reuse."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.kill()
    process.wait()


def test_down_never_signals_a_process_that_is_not_its_server(
    state_file: Path, bystander: subprocess.Popen[bytes]
) -> None:
    port = _free_port()
    state_file.write_text(json.dumps({"pid": bystander.pid, "port": port, "endpoint": f"http://127.0.0.1:{port}"}))

    status = CliRunner().invoke(app, ["local", "status"])
    down = CliRunner().invoke(app, ["local", "down"])

    assert status.exit_code == 0
    assert status.stdout == (
        f"not running: local.json names pid {bystander.pid} on port {port}, but pid {bystander.pid} is another "
        "program: `clockless local down` removes it, `clockless local up` starts a server\n"
    )
    assert down.stdout == (
        f"not running: removed a stale local.json (pid {bystander.pid} is another program); signalled nothing\n"
    )
    assert bystander.poll() is None, "the unrelated process was signalled"
    assert not state_file.exists()


def test_status_reports_a_dead_pid_in_one_line(state_file: Path) -> None:
    finished = subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert finished.returncode == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state_file.write_text(json.dumps({"pid": dead.pid, "port": 1, "endpoint": "http://127.0.0.1:1"}))

    status = CliRunner().invoke(app, ["local", "status", "--json"])

    assert json.loads(status.stdout) == {
        "running": False,
        "stale": f"local.json names pid {dead.pid} on port 1, but pid {dead.pid} is not running: "
        "`clockless local down` removes it, `clockless local up` starts a server",
    }


def test_up_down_and_a_second_up_on_another_port(state_file: Path, template: Template) -> None:
    port, other = _free_port(), _free_port()
    runner = CliRunner()
    up = runner.invoke(app, ["local", "up", "--port", str(port)])
    try:
        assert up.exit_code == 0, up.output
        pid = json.loads(state_file.read_text())["pid"]

        again = runner.invoke(app, ["local", "up", "--port", str(port)])
        assert again.exit_code == 0, again.output
        assert f"http://127.0.0.1:{port} (pid {pid})" in again.stdout

        elsewhere = runner.invoke(app, ["local", "up", "--port", str(other)])
        assert elsewhere.exit_code == 2
        assert elsewhere.stderr == (
            f"error: the embedded DynamoDB already runs on port {port} (pid {pid}): stop it with `clockless local "
            f"down` before starting one on {other}, or use --port {port}\n"
        )
        assert "Traceback" not in elsewhere.output

        status = runner.invoke(app, ["local", "status", "--json"])
        assert json.loads(status.stdout)["running"] is True
        # The template's queues are there too, empty.
        queues = json.loads(status.stdout)["queues"]
        assert set(queues) == set(template.resources_of_type("AWS::SQS::Queue"))
        assert all(depth == {"visible": 0, "in_flight": 0} for depth in queues.values())
    finally:
        down = runner.invoke(app, ["local", "down"])
    assert down.stdout == f"stopped the embedded DynamoDB on port {port} (pid {pid})\n"
    assert not state_file.exists()
    assert runner.invoke(app, ["local", "status"]).stdout == "not running\n"
