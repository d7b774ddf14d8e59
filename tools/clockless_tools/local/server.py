"""`clockless local up/down/status`: a background moto server on loopback (in memory), tracked by a state file.

The state file only says what was started; a process is treated as our server only when it is
proven to be: alive, its command line the server module with the recorded port, and that port
listening. A stale file (the server died, the PID was reused) is reported, never signalled.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clockless_tools.errors import ToolError
from clockless_tools.local.dynamodb import create_tables, dynamodb_client
from clockless_tools.local.queues import sqs_client
from clockless_tools.local.services import provision_services
from clockless_tools.template.loader import PROJECT_ROOT
from clockless_tools.template.model import Template

STATE_FILE = PROJECT_ROOT / ".clockless" / "local.json"
# Another state file (and so another server) for this checkout: a second runtime beside the
# developer's own, as the docs' executed tour runs one (tests/integration/test_doc_outputs.py).
STATE_ENV = "CLOCKLESS_LOCAL_STATE"
SERVER_MODULE = "clockless_tools.local.dynamodb"
LOOPBACK = "127.0.0.1"
# Listening on every address: this machine's own tools still reach it on loopback.
_ANY_ADDRESS = ("0.0.0.0", "::")  # noqa: S104 - what the user asked for with --host


class LocalServerError(ToolError, RuntimeError):
    """`local up` refused; the message is one line saying why and what to do."""


@dataclass(frozen=True)
class ServerState:
    """What the state file says, and whether the process it names is provably our server."""

    path: Path
    pid: int
    port: int
    endpoint: str
    ours: bool
    why_not: str = ""
    host: str = LOOPBACK


def _state_file(state_file: Path | None) -> Path:
    if state_file is not None:
        return state_file
    return Path(os.environ[STATE_ENV]) if os.environ.get(STATE_ENV) else STATE_FILE


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _command_line(pid: int) -> str | None:
    """The process's command line (`ps` works on Linux and macOS alike), None when it is gone."""
    result = subprocess.run(
        ["ps", "-ww", "-o", "args=", "-p", str(pid)],
        capture_output=True,
        text=True,
        check=False,
    )
    return (result.stdout.strip() or None) if result.returncode == 0 else None


def _reachable_at(host: str) -> str:
    """The address this machine's own tools connect to, for a server listening on `host`."""
    return LOOPBACK if host in _ANY_ADDRESS else host


def _listening(port: int, host: str = LOOPBACK) -> bool:
    address = _reachable_at(host)
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((address, port)) == 0


def read_state(state_file: Path | None = None) -> ServerState | None:
    """The recorded server, checked against the process table; None when no state file is readable."""
    path = _state_file(state_file)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        pid, port, endpoint = int(raw["pid"]), int(raw["port"]), str(raw["endpoint"])
        host = str(raw.get("host", LOOPBACK))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(pid):
        return ServerState(path, pid, port, endpoint, ours=False, why_not=f"pid {pid} is not running", host=host)
    argv = (_command_line(pid) or "").split()
    if SERVER_MODULE not in argv or not any(a == "--port" and b == str(port) for a, b in itertools.pairwise(argv)):
        return ServerState(path, pid, port, endpoint, ours=False, why_not=f"pid {pid} is another program", host=host)
    if not _listening(port, host):
        why_not = f"pid {pid} does not listen on {host}:{port}"
        return ServerState(path, pid, port, endpoint, ours=False, why_not=why_not, host=host)
    return ServerState(path, pid, port, endpoint, ours=True, host=host)


def running_endpoint(state_file: Path | None = None) -> str | None:
    state = read_state(state_file)
    return state.endpoint if state is not None and state.ours else None


def _wait_for_port(port: int, host: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _listening(port, host):
            return
        time.sleep(0.05)
    raise LocalServerError(
        f"moto's server did not listen on {host}:{port} within {timeout:.0f} s: see .clockless/moto-server.log"
    )


def _given(option: str, value: int) -> str:
    """`--port 8766`, or `PORT=8766` as make takes it."""
    return f"{option}{value}" if option.endswith("=") else f"{option} {value}"


def _bindable(host: str) -> bool:
    """Whether `host` is an address of this machine (or every address), which a server can listen on."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as probe:
            probe.bind((host, 0))
    except OSError:
        return False
    return True


def start_server(
    template: Template,
    *,
    port: int,
    host: str = LOOPBACK,
    state_file: Path | None = None,
    port_option: str = "--port",
) -> dict[str, Any]:
    """Start the server on `host`:`port` (or reuse the running one when it listens there). `port_option`:
    how the user gives a port, for the errors (`--port`, or `PORT=` under make)."""
    path = _state_file(state_file)
    state = read_state(path)
    if state is not None and state.ours:
        if (state.host, state.port) != (host, port):
            flags = _given(port_option, state.port) + ("" if state.host == LOOPBACK else f" --host {state.host}")
            running = f"port {state.port}" if state.host == LOOPBACK else f"{state.host}:{state.port}"
            asked = str(port) if host == LOOPBACK else f"{host}:{port}"
            raise LocalServerError(
                f"the embedded DynamoDB already runs on {running} (pid {state.pid}): stop it with "
                f"`clockless local down` before starting one on {asked}, or use {flags}"
            )
        tables = create_tables(template, state.endpoint)
        provision_services(template, state.endpoint)
        return {"pid": state.pid, "endpoint": state.endpoint, "port": state.port, "host": host, "tables": tables}
    if not _bindable(host):
        raise LocalServerError(
            f"--host {host} is not an address of this machine: give one it has (the container bridge's gateway, "
            "e.g. 172.17.0.1, or 0.0.0.0 for every address)"
        )
    if _listening(port, host):
        raise LocalServerError(
            f"port {port} on {host} is taken by another program: choose another, e.g. {_given(port_option, port + 1)}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    log = (path.parent / "moto-server.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", SERVER_MODULE, "--host", host, "--port", str(port)],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_port(port, host)
    except LocalServerError:
        process.terminate()
        raise
    address = _reachable_at(host)
    endpoint = f"http://{f'[{address}]' if ':' in address else address}:{port}"
    tables = create_tables(template, endpoint)
    provision_services(template, endpoint)
    started = {"pid": process.pid, "endpoint": endpoint, "port": port, "host": host, "tables": tables}
    path.write_text(json.dumps(started), encoding="utf-8")
    return started


def stop_server(state_file: Path | None = None, *, timeout: float = 10.0) -> str:
    """Stop our server; a stale state file is removed and nothing is signalled. Returns one line."""
    path = _state_file(state_file)
    state = read_state(path)
    if state is None:
        return "not running"
    if not state.ours:
        path.unlink(missing_ok=True)
        return f"not running: removed a stale {path.name} ({state.why_not}); signalled nothing"
    os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(state.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    path.unlink(missing_ok=True)
    return f"stopped the embedded DynamoDB on port {state.port} (pid {state.pid})"


def server_status(state_file: Path | None = None) -> dict[str, Any]:
    state = read_state(state_file)
    if state is None:
        return {"running": False}
    if not state.ours:
        return {
            "running": False,
            "stale": f"{state.path.name} names pid {state.pid} on port {state.port}, but {state.why_not}: "
            "`clockless local down` removes it, `clockless local up` starts a server",
        }
    client = dynamodb_client(state.endpoint)
    counts = {}
    for table in client.list_tables()["TableNames"]:
        counts[table] = client.describe_table(TableName=table)["Table"].get("ItemCount", 0)
    return {
        "running": True,
        "pid": state.pid,
        "port": state.port,
        "endpoint": state.endpoint,
        "tables": counts,
        "queues": queue_depths(state.endpoint),
    }


def queue_depths(endpoint: str) -> dict[str, dict[str, int]]:
    """Each queue on the server: messages waiting (visible) and in flight (received, not deleted)."""
    client = sqs_client(endpoint)
    depths = {}
    for url in client.list_queues().get("QueueUrls") or []:
        attributes = client.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        depths[url.rsplit("/", 1)[-1]] = {
            "visible": int(attributes.get("ApproximateNumberOfMessages", 0)),
            "in_flight": int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        }
    return dict(sorted(depths.items()))
