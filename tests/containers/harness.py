"""SAM CLI in real containers against an embedded stack, and `clockless invoke` against another
holding the same data: what both give for the same events is compared table by table.

`SamLocal` runs `sam build` once (Architecture=x86_64 on this machine: native, no emulation) and
then `sam local invoke`, `start-lambda` and `start-api` with pulls off (`--skip-pull-image`, the
stand-in image as `--invoke-image`), the functions' endpoints in events/env.local.json moved to the
test's stack and `host.docker.internal` mapped to the engine's bridge gateway, where that stack
listens (`clockless local up --host`). A `Stack` and a `SamLocal` may run a copy of the project
(`project_copy`: its own tools, kit, functions and template), as the new-job module does.
`every_sample_does_what_clockless_invoke_does` is the check each job's samples get."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clockless_tools.engine.dockerd import Engine, EngineError, find_engine
from clockless_tools.engine.runtime_image import host_architecture, image_present, runtime_image
from clockless_tools.engine.sam_local import free_port, serving
from clockless_tools.engine.sam_local import lambda_client as sam_lambda_client
from clockless_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, local_client
from clockless_tools.local.poller import OUTCOME_DONE, Message, SqsPoller
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import Template
from tests.conftest import PROJECT_ROOT
from tests.jobs import Job

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


def copy_environment(root: Path) -> dict[str, str]:
    """os.environ as from a shell (no endpoint of this process's), and for a copy of the project
    its tools, kit and every function package first on the path, as `make setup` installs them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT_URL", "PYTEST_"))}
    if root == PROJECT_ROOT:
        return env
    paths = [root / "tools", root / "layers" / "clockless", *sorted((root / "functions").iterdir()), root]
    return env | {"PYTHONPATH": os.pathsep.join(str(path) for path in paths)}


def project_copy(destination: Path) -> Path:
    """Every file git tracks, copied to `destination`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for relative in filter(None, listed):
        source = PROJECT_ROOT / relative
        if source.is_file():
            (destination / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / relative)
    return destination


@dataclass
class Stack:
    """An embedded stack of its own (state file, port, address), driven by the clockless CLI."""

    state: Path
    port: int
    host: str = "127.0.0.1"
    # A copy of the project (`project_copy`) runs its own tools, kit and functions.
    root: Path = PROJECT_ROOT

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def cli(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = copy_environment(self.root) | {"CLOCKLESS_LOCAL_STATE": str(self.state)}
        command = [str(CLOCKLESS)] if self.root == PROJECT_ROOT else [sys.executable, "-m", "clockless_tools.cli"]
        result = subprocess.run(
            [*command, *args],
            cwd=self.root,
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

    def write_env_file(self, overrides: Mapping[str, Mapping[str, str]] | None = None) -> None:
        """events/env.local.json with the documented port moved to the stack's, and each function's
        `overrides` (by logical id) over its entries."""
        text = (self.root / LOCAL_ENV).read_text(encoding="utf-8")
        documented = f"http://host.docker.internal:{DOCUMENTED_PORT}"
        assert documented in text, f"{LOCAL_ENV} no longer points at {documented}"
        variables = json.loads(text.replace(documented, f"http://host.docker.internal:{self.stack.port}"))
        for function_id, values in (overrides or {}).items():
            variables[function_id] = {**variables.get(function_id, {}), **values}
        self.env_file.write_text(json.dumps(variables, indent=2), encoding="utf-8")

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

    def log(self, command: str) -> Path:
        return self.env_file.parent / f"{command}.log"

    def invoke(self, function_id: str, event: Path) -> subprocess.CompletedProcess[str]:
        return self._run(["local", "invoke", function_id, "--event", str(event), *self._local_options()], 600)

    @contextlib.contextmanager
    def serving(self, command: str, port: int, *extra: str, host: str = "127.0.0.1") -> Iterator[subprocess.Popen[str]]:
        """`sam local start-lambda` or `start-api` on `host`:`port`, until the block ends (its output
        in `<command>.log` beside the env file)."""
        args = [str(SAM), "local", command, "--port", str(port), "--host", host, *self._local_options(), *extra]
        self.commands.append(args)
        log = self.log(command)
        try:
            with serving(args, cwd=self.root, env=self.environment(), host=host, port=port, log=log) as process:
                yield process
        except EngineError as error:
            # The log sits in a temporary folder CI does not keep: the failure carries it.
            raise AssertionError(f"{error}\n{log.read_text()}") from error


@dataclass(frozen=True)
class Built:
    engine: Engine
    image: str
    build_dir: Path
    root: Path  # the project built
    parameters: tuple[str, ...]  # its --parameter-overrides


def build(root: Path, build_dir: Path, architecture: str = "x86_64") -> Built:
    """`sam build` of the project at `root` for `architecture` on the engine, with its image there."""
    engine = find_engine()
    assert engine is not None, "no container engine answers: run these tests with `make test-containers`"
    image = runtime_image(architecture).tag
    assert image_present(engine, image), (
        f"the runtime image {image} is missing: `make runtime-image"
        f"{'' if architecture == host_architecture() else f' ARCH={architecture}'}` builds it"
    )
    parameters = (f"Architecture={architecture}",)
    unused = Stack(build_dir.parent / "unused.json", 0, root=root)
    SamLocal(engine, image, unused, build_dir, build_dir.parent / "env", root=root, parameters=parameters).build()
    return Built(engine, image, build_dir, root, parameters)


def lambda_client(host: str, port: int) -> Any:
    """A boto3 Lambda client on `sam local start-lambda`, as teams point theirs in integration tests."""
    return sam_lambda_client(host, port, region=LOCAL_REGION, credentials=LOCAL_CREDENTIALS, read_timeout=300)


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


def _reference(stack: Stack, job: Job, sample: str) -> subprocess.CompletedProcess[str]:
    return stack.cli(
        "invoke",
        job.function_id,
        "-e",
        str(stack.root / "events" / job.package / f"{sample}.json"),
        "--endpoint",
        stack.endpoint,
        check=False,
    )


def _first_line(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout.splitlines()[0])


def _drain_through_sam(sam: SamLocal, workdir: Path, template: Template) -> list[str]:
    """The work queues emptied as Lambda's poller would: the first batch by `sam local invoke`
    of the worker with its SQS event, every later one through `start-lambda` and boto3."""
    how: list[str] = []
    port = free_port()
    with sam.serving("start-lambda", port, "--warm-containers", "LAZY"):
        client = lambda_client("127.0.0.1", port)

        def invoke(function_id: str, event: dict[str, Any], messages: Sequence[Message]) -> tuple[Any, Any]:
            if not how:
                path = workdir / f"{function_id}-sqs.json"
                path.write_text(json.dumps(event), encoding="utf-8")
                result = sam.invoke(function_id, path)
                how.append(f"sam local invoke {function_id}")
                assert result.returncode == 0, result.stderr
                return response_of(result), None
            answer = client.invoke(FunctionName=function_id, Payload=json.dumps(event).encode())
            how.append(f"start-lambda {function_id}")
            payload = json.loads(answer["Payload"].read() or b"null")
            assert "FunctionError" not in answer, payload
            return payload, None

        runtime = LocalLambdaRuntime(template, sam.stack.endpoint)
        poller = SqsPoller(runtime, sam.stack.endpoint, invoke=invoke, parallel=False)
        invocations = poller.drain()
    assert [i.outcome for i in invocations] == [OUTCOME_DONE] * len(invocations)
    return how


def every_sample_does_what_clockless_invoke_does(
    sam_local: SamLocal, reference: Stack, job: Job, workdir: Path, template: Template
) -> None:
    """A job's samples (events/<package>/) through `sam local invoke`, its worker's batches through
    `sam local invoke` and `start-lambda`, judged against `clockless invoke` on `reference`."""
    # The tick: SAM's container runs the coordinator (or the whole job without fan-out)
    tick = sam_local.invoke(job.function_id, sam_local.root / "events" / job.package / "tick.json")
    assert tick.returncode == 0, tick.stderr
    answered = response_of(tick)
    assert answered["outcome"] == "executed", answered
    expected = _reference(reference, job, "tick")
    assert expected.returncode == 0, expected.stderr
    assert _stable(answered) == _stable(_first_line(expected))

    # Its worker, with what the coordinator queued (clockless invoke drained its own already)
    if job.worker_id is not None:
        how = _drain_through_sam(sam_local, workdir, template)
        assert how[0] == f"sam local invoke {job.worker_id}"
        assert len(how) >= job.shards, how  # a partition per shard at least (and their continuations)
    different = differences(sam_local.stack.contents(), reference.contents())
    assert not different, "\n".join(different)

    # The retry: a duplicate, answered with the first result and changing nothing
    before = sam_local.stack.contents()
    retry = sam_local.invoke(job.function_id, sam_local.root / "events" / job.package / "retry.json")
    assert retry.returncode == 0, retry.stderr
    again = response_of(retry)
    assert again["outcome"] == "duplicate", again
    assert _stable(again) == _stable(_first_line(_reference(reference, job, "retry")))
    assert sam_local.stack.contents() == before

    # The malformed tick: one clear error naming the field, nothing written
    malformed = sam_local.invoke(job.function_id, sam_local.root / "events" / job.package / "malformed.json")
    error = response_of(malformed)
    reference_error = _first_line(_reference(reference, job, "malformed"))
    assert (error["errorType"], error["errorMessage"]) == (
        reference_error["errorType"],
        reference_error["errorMessage"],
    )
    assert "scheduled_time" in error["errorMessage"]
    assert "\n" not in error["errorMessage"]
    assert sam_local.stack.contents() == before
    different = differences(before, reference.contents())
    assert not different, "\n".join(different)
