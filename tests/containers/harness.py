"""SAM CLI in real containers against an embedded stack, and `clockless invoke` against another
holding the same data: what both give for the same events is compared table by table.

`SamLocal` runs `sam build` once (Architecture=x86_64 on this machine: native, no emulation) and
then `sam local invoke`, `start-lambda` and `start-api` with pulls off (`--skip-pull-image`, the
stand-in image as `--invoke-image`), the functions' endpoints in events/env.local.json moved to the
test's stack and `host.docker.internal` mapped to the engine's bridge gateway, where that stack
listens (`clockless local up --host`)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clockless_tools.engine.dockerd import Engine
from clockless_tools.local.dynamodb import local_client
from tests.conftest import PROJECT_ROOT

SAM = PROJECT_ROOT / ".venv-sam" / "bin" / "sam"
BIN = Path(sys.executable).parent
CLOCKLESS = BIN / "clockless"
LOCAL_ENV = "events/env.local.json"
DOCUMENTED_PORT = 8765
# The seeded data's moment: the samples' scheduled time, so each tick has due work.
SEEDED_AT = "2026-11-28T14:00:00Z"
# What differs between two runs of the same events: clocks, durations, claims, leases and message ids.
VOLATILE = frozenset(
    {
        "expiration",
        "in_progress_expiration",
        "claim_id",
        "request_id",
        "ttl",
        "finished_by",
        "lease_owner",
        "message_id",
    }
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _volatile(name: str) -> bool:
    return name in VOLATILE or name.endswith(("_at", "_ms"))


def _stable(value: Any) -> Any:
    """`value` without what differs from run to run, JSON held in strings included."""
    if isinstance(value, Mapping):
        return {k: _stable(v) for k, v in sorted(value.items()) if not _volatile(str(k))}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str) and value[:1] in "{[":
        with contextlib.suppress(ValueError):
            return _stable(json.loads(value))
    return value


@dataclass
class Stack:
    """An embedded stack of its own (state file, port, address), driven by the clockless CLI."""

    state: Path
    port: int
    host: str = "127.0.0.1"

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def cli(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "CLOCKLESS_LOCAL_STATE": str(self.state)}
        for name in [n for n in env if n.startswith("AWS_ENDPOINT_URL")]:
            del env[name]
        result = subprocess.run(
            [str(CLOCKLESS), *args],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        assert not check or result.returncode == 0, f"clockless {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result

    def up(self) -> None:
        self.cli("local", "up", "--port", str(self.port), "--host", self.host)
        self.cli("local", "seed", "--now", SEEDED_AT)

    def down(self) -> None:
        self.cli("local", "down", check=False)

    def client(self, service: str) -> Any:
        return local_client(service, self.endpoint)

    def contents(self) -> dict[str, list[Any]]:
        """Every table's items, without what differs from run to run, in key order."""
        dynamodb = self.client("dynamodb")
        contents = {}
        for table in dynamodb.list_tables()["TableNames"]:
            items = [
                item for page in dynamodb.get_paginator("scan").paginate(TableName=table) for item in page["Items"]
            ]
            contents[table] = sorted((_stable(item) for item in items), key=lambda i: json.dumps(i, sort_keys=True))
        return contents


@dataclass
class SamLocal:
    """`sam local` on `engine`, with the built template, against `stack`."""

    engine: Engine
    image: str
    stack: Stack
    build_dir: Path
    env_file: Path
    root: Path = PROJECT_ROOT
    parameters: tuple[str, ...] = ("Architecture=x86_64",)
    commands: list[list[str]] = field(default_factory=list)

    @property
    def template(self) -> Path:
        return self.build_dir / "template.yaml"

    def environment(self) -> dict[str, str]:
        env = self.engine.environment() | {"SAM_CLI_TELEMETRY": "0", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        for name in [n for n in env if n.startswith("AWS_ENDPOINT_URL")]:
            del env[name]
        return env | {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def _run(self, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        command = [str(SAM), *args]
        self.commands.append(command)
        return subprocess.run(
            command, cwd=self.root, env=self.environment(), capture_output=True, text=True, check=False, timeout=timeout
        )

    def build(self) -> None:
        result = self._run(
            ["build", "--parallel", "--build-dir", str(self.build_dir), "--parameter-overrides", *self.parameters], 600
        )
        assert result.returncode == 0, f"sam build:\n{result.stdout}\n{result.stderr}"

    def write_env_file(self) -> None:
        """events/env.local.json with the documented port moved to the stack's."""
        text = (self.root / LOCAL_ENV).read_text(encoding="utf-8")
        documented = f"http://host.docker.internal:{DOCUMENTED_PORT}"
        assert documented in text, f"{LOCAL_ENV} no longer points at {documented}"
        self.env_file.write_text(text.replace(documented, f"http://host.docker.internal:{self.stack.port}"))

    def _local_options(self) -> list[str]:
        return [
            "--template",
            str(self.template),
            # samconfig.toml sets it, but SAM reads the one beside --template (the build directory).
            "--language-extensions",
            "--env-vars",
            str(self.env_file),
            # As documented for Linux: host-gateway is the bridge's gateway, where the stack listens.
            "--add-host",
            "host.docker.internal:host-gateway",
            "--invoke-image",
            self.image,
            "--skip-pull-image",
            "--parameter-overrides",
            *self.parameters,
        ]

    def invoke(self, function_id: str, event: Path) -> subprocess.CompletedProcess[str]:
        return self._run(["local", "invoke", function_id, "--event", str(event), *self._local_options()], 600)

    @contextlib.contextmanager
    def serving(self, command: str, port: int, *extra: str) -> Iterator[subprocess.Popen[str]]:
        """`sam local start-lambda` or `start-api` on `port`, until the block ends."""
        args = [str(SAM), "local", command, "--port", str(port), "--host", "127.0.0.1", *self._local_options(), *extra]
        self.commands.append(args)
        log = self.build_dir.parent / f"{command}.log"
        with log.open("w") as output:
            process = subprocess.Popen(
                args, cwd=self.root, env=self.environment(), stdout=output, stderr=subprocess.STDOUT, text=True
            )
        try:
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, f"sam local {command} exited:\n{log.read_text()}"
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert time.monotonic() < deadline, f"sam local {command} did not listen:\n{log.read_text()}"
                time.sleep(0.5)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def differences(ours: Mapping[str, list[Any]], theirs: Mapping[str, list[Any]]) -> list[str]:
    """Items one side holds and the other does not, table by table (empty when the same)."""
    found = []
    for table in sorted(set(ours) | set(theirs)):
        mine = [json.dumps(i, sort_keys=True) for i in ours.get(table, [])]
        other = [json.dumps(i, sort_keys=True) for i in theirs.get(table, [])]
        found += [f"{table} only through SAM: {item}" for item in mine if item not in other]
        found += [f"{table} only through clockless invoke: {item}" for item in other if item not in mine]
    return found


def response_of(result: subprocess.CompletedProcess[str]) -> Any:
    """What `sam local invoke` printed as the function's response: its last line of stdout."""
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines, f"no response on stdout:\n{result.stderr}"
    return json.loads(lines[-1])
