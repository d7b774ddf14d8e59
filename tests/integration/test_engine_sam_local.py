"""`serving`, the wait for a `sam local start-*` server shared by `clockless engine measure` and the
container tests, with stand-in servers: it yields once the port listens and stops the server after,
and a server that exits or never listens is an EngineError naming its log."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from clockless_tools.engine.dockerd import EngineError
from clockless_tools.engine.sam_local import free_port, serving

LISTENER = (
    "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); time.sleep(60)"
)


def test_serving_yields_once_the_port_listens_and_stops_the_server_after(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "start-lambda.log"

    command = [sys.executable, "-c", LISTENER, str(port)]
    with serving(command, cwd=tmp_path, env=os.environ, host="127.0.0.1", port=port, log=log) as process:
        assert process.poll() is None

    assert process.returncode is not None
    assert log.exists()


def test_a_server_that_exits_before_listening_names_its_exit_and_log(tmp_path: Path) -> None:
    log = tmp_path / "start-api.log"
    command = [sys.executable, "-c", "import sys; print('port in use'); sys.exit(3)"]

    server = serving(command, cwd=tmp_path, env=os.environ, host="127.0.0.1", port=free_port(), log=log)
    with pytest.raises(EngineError, match=r"exited 3 before listening: see .*start-api\.log"), server:
        pytest.fail("the block ran for a server that never listened")
    assert "port in use" in log.read_text()


def test_a_server_that_never_listens_is_reported_at_the_deadline_and_stopped(tmp_path: Path) -> None:
    log = tmp_path / "start-lambda.log"
    port = free_port()
    command = [sys.executable, "-c", "import time; time.sleep(60)"]

    server = serving(command, cwd=tmp_path, env=os.environ, host="127.0.0.1", port=port, log=log, listen_seconds=1)
    with pytest.raises(EngineError, match=rf"did not listen on 127\.0\.0\.1:{port} within 1 s"), server:
        pytest.fail("the block ran for a server that never listened")
