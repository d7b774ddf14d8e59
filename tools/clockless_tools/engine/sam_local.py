"""A `sam local start-lambda` / `start-api` server held open for a block, and a Lambda client on it.

`clockless engine measure` and the container tests both start SAM CLI's servers: one way to wait
until the server listens (it builds or starts containers first, which takes seconds to minutes) and
one way to stop it, so a server that exits or never listens is reported with its log either way.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from clockless_tools.engine.dockerd import EngineError

LISTEN_SECONDS: Final = 120.0
# SAM CLI stops its containers on SIGTERM; a server still up after this is killed.
STOP_SECONDS: Final = 30.0


def free_port() -> int:
    """A TCP port nothing on 127.0.0.1 holds now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serving(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    host: str,
    port: int,
    log: Path,
    listen_seconds: float = LISTEN_SECONDS,
) -> Iterator[subprocess.Popen[str]]:
    """Run `command` (a `sam local start-*` server on `host`:`port`, its output in `log`) until the
    block ends; EngineError, naming the log, when it exits or does not listen within `listen_seconds`."""
    what = " ".join([Path(command[0]).name, *command[1:3]])  # e.g. "sam local start-api"
    with log.open("w") as output:
        process = subprocess.Popen(
            list(command), cwd=cwd, env=dict(env), stdout=output, stderr=subprocess.STDOUT, text=True
        )
    try:
        deadline = time.monotonic() + listen_seconds
        while True:
            if process.poll() is not None:
                raise EngineError(f"{what} exited {process.returncode} before listening: see {log}")
            with socket.socket() as probe:
                if probe.connect_ex((host, port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise EngineError(f"{what} did not listen on {host}:{port} within {listen_seconds:.0f} s: see {log}")
            time.sleep(0.5)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def lambda_client(host: str, port: int, *, region: str, credentials: Mapping[str, str], read_timeout: int) -> Any:
    """A boto3 Lambda client on `sam local start-lambda`, as teams point theirs in integration tests:
    no retries, so one invoke is one run of the function."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "lambda",
        endpoint_url=f"http://{host}:{port}",
        region_name=region,
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        config=Config(read_timeout=read_timeout, retries={"max_attempts": 0}),
    )
