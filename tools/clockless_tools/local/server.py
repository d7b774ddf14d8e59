"""`clockless local up/down/status`: a persistent moto server on loopback, tracked by a state file."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from clockless_tools.local.dynamodb import create_tables, dynamodb_client
from clockless_tools.local.services import provision_services
from clockless_tools.template.loader import PROJECT_ROOT
from clockless_tools.template.model import Template

STATE_FILE = PROJECT_ROOT / ".clockless" / "local.json"


class LocalServerError(RuntimeError):
    pass


def _read_state() -> dict[str, Any] | None:
    try:
        return json.loads(STATE_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def running_endpoint() -> str | None:
    state = _read_state()
    if state and _alive(int(state["pid"])):
        return str(state["endpoint"])
    return None


def _wait_for_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise LocalServerError(f"moto's server did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def start_server(template: Template, *, port: int) -> dict[str, Any]:
    if (endpoint := running_endpoint()) is not None:
        tables = create_tables(template, endpoint)
        provision_services(template, endpoint)
        state = _read_state() or {}
        return {**state, "tables": tables}
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise LocalServerError(f"port {port} on 127.0.0.1 is taken; choose another with --port")
    STATE_FILE.parent.mkdir(exist_ok=True)
    log = (STATE_FILE.parent / "moto-server.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "clockless_tools.local.dynamodb", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    _wait_for_port(port)
    endpoint = f"http://127.0.0.1:{port}"
    tables = create_tables(template, endpoint)
    provision_services(template, endpoint)
    state = {"pid": process.pid, "endpoint": endpoint, "port": port, "tables": tables}
    STATE_FILE.write_text(json.dumps(state), encoding="utf-8")
    return state


def stop_server() -> bool:
    state = _read_state()
    STATE_FILE.unlink(missing_ok=True)
    if not state or not _alive(int(state["pid"])):
        return False
    os.kill(int(state["pid"]), signal.SIGTERM)
    return True


def server_status() -> dict[str, Any]:
    state = _read_state()
    if not state or not _alive(int(state["pid"])):
        return {"running": False}
    client = dynamodb_client(state["endpoint"])
    counts = {}
    for table in client.list_tables()["TableNames"]:
        counts[table] = client.describe_table(TableName=table)["Table"].get("ItemCount", 0)
    return {"running": True, "pid": state["pid"], "endpoint": state["endpoint"], "tables": counts}
