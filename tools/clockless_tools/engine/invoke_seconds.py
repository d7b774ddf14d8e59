"""`clockless engine measure`: how many seconds a cold and a warm invoke through SAM CLI take here,
written to bench/sam-local.json, which docs/running-locally.md's table is generated from
(`clockless engine timings`, `make docs`).

It runs the documented commands (docs/running-locally.md, "sam local in containers") on the engine
in use, with pulls off: `sam build` for this machine's architecture (native, no emulation), an
embedded stack of its own on the bridge's gateway, seeded as of the samples' time, and the job's
tick once (its effects are not what is timed). Then its duplicate delivery (`retry.json`: the path
every redelivery takes, the same work each time):

- cold: `sam local invoke`, a new container each time, from the command's start to its exit;
- warm: one `sam local start-lambda --warm-containers EAGER`, a boto3 Lambda client's invoke after
  one to warm it, from the request to the answer.

Seconds on a shared machine move with its load: the load average before and after is kept beside
them, and the table says it.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from clockless_tools.engine.dockerd import Engine, EngineError, bridge_gateway, require_engine
from clockless_tools.engine.runtime_image import host_architecture, image_present, missing_image_error, runtime_image
from clockless_tools.engine.sam_local import free_port, lambda_client, serving
from clockless_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION
from clockless_tools.template.loader import PROJECT_ROOT

MEASURED: Final = PROJECT_ROOT / "bench" / "sam-local.json"
SAM: Final = PROJECT_ROOT / ".venv-sam" / "bin" / "sam"
LOCAL_ENV: Final = PROJECT_ROOT / "events" / "env.local.json"
DOCUMENTED_ENDPOINT: Final = "http://host.docker.internal:8765"
# The samples' scheduled time: the seeded data is due then (tests/containers seed the same).
SEEDED_AT: Final = "2026-11-28T14:00:00Z"
DEFAULT_FUNCTION: Final = "SessionCleanupFunction"
DEFAULT_RUNS: Final = 3


def _environment(engine: Engine) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = engine.environment() | {"SAM_CLI_TELEMETRY": "0", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    for name in [n for n in env if n.startswith("AWS_ENDPOINT_URL")]:
        del env[name]
    # Never a real account: the functions' endpoints are the embedded stack's (env.local.json).
    return env | LOCAL_CREDENTIALS | {"AWS_DEFAULT_REGION": LOCAL_REGION}


def _run(command: Sequence[str], env: dict[str, str], what: str, timeout: float = 900) -> None:
    done = subprocess.run(
        list(command), cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False, timeout=timeout
    )
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise EngineError(f"{what} failed (exit {done.returncode}): {last}")


@contextlib.contextmanager
def _stack(host: str, port: int, workdir: Path) -> Iterator[None]:
    """`clockless local up --host` on its own state file, seeded; `local down` afterwards."""
    cli = [sys.executable, "-m", "clockless_tools.cli"]
    env = {**os.environ, "CLOCKLESS_LOCAL_STATE": str(workdir / "local.json")}
    try:
        _run([*cli, "local", "up", "--port", str(port), "--host", host], env, "clockless local up")
        _run([*cli, "local", "seed", "--now", SEEDED_AT], env, "clockless local seed")
        yield
    finally:
        subprocess.run([*cli, "local", "down"], cwd=PROJECT_ROOT, env=env, capture_output=True, check=False)


def _seconds(values: Sequence[float]) -> dict[str, Any]:
    return {
        "median": round(statistics.median(values), 2),
        "min": round(min(values), 2),
        "max": round(max(values), 2),
        "runs": [round(v, 2) for v in values],
    }


def measure(function_id: str = DEFAULT_FUNCTION, runs: int = DEFAULT_RUNS) -> dict[str, Any]:
    """Cold and warm seconds of `function_id`'s duplicate delivery through SAM CLI; the document."""
    from clockless_tools.template.model import Template

    template = Template.load(PROJECT_ROOT / "template.yaml")
    function = template.function(function_id)
    events = PROJECT_ROOT / "events" / function.package_dir
    engine = require_engine()
    architecture = host_architecture()
    image = runtime_image(architecture).tag
    if not image_present(engine, image):
        raise missing_image_error(image, architecture)
    env = _environment(engine)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="clockless-measure-") as scratch:
        workdir = Path(scratch)
        build_dir = workdir / "build"
        parameters = ["--parameter-overrides", f"Architecture={architecture}"]
        _run([str(SAM), "build", "--build-dir", str(build_dir), *parameters], env, "sam build")
        host, port = bridge_gateway(engine), free_port()
        env_file = workdir / "env.local.json"
        env_file.write_text(
            LOCAL_ENV.read_text(encoding="utf-8").replace(DOCUMENTED_ENDPOINT, f"http://host.docker.internal:{port}"),
            encoding="utf-8",
        )
        options = [
            "--template", str(build_dir / "template.yaml"), "--language-extensions",
            "--env-vars", str(env_file), "--add-host", "host.docker.internal:host-gateway",
            "--invoke-image", image, "--skip-pull-image", *parameters,
        ]  # fmt: skip
        invoke = [str(SAM), "local", "invoke", function_id, *options]
        with _stack(host, port, workdir):
            _run([*invoke, "--event", str(events / "tick.json")], env, f"sam local invoke {function_id} (its tick)")
            cold = []
            for _ in range(runs):
                started = time.monotonic()
                _run([*invoke, "--event", str(events / "retry.json")], env, f"sam local invoke {function_id}")
                cold.append(time.monotonic() - started)
            lambda_port = free_port()
            serve = [
                str(SAM), "local", "start-lambda", "--port", str(lambda_port), "--host", "127.0.0.1",
                *options, "--warm-containers", "EAGER",
            ]  # fmt: skip
            payload = (events / "retry.json").read_bytes()
            with serving(
                serve, cwd=PROJECT_ROOT, env=env, host="127.0.0.1", port=lambda_port, log=workdir / "start-lambda.log"
            ):
                client = lambda_client(
                    "127.0.0.1", lambda_port, region=LOCAL_REGION, credentials=LOCAL_CREDENTIALS, read_timeout=600
                )
                warm = []
                for attempt in range(runs + 1):
                    started = time.monotonic()
                    answer = client.invoke(FunctionName=function_id, Payload=payload)
                    body = answer["Payload"].read()
                    if "FunctionError" in answer:
                        raise EngineError(f"start-lambda's {function_id} failed: {body[:200]!r}")
                    if attempt:  # the first one starts the runtime in the warm container
                        warm.append(time.monotonic() - started)
    return {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _commit(),
        "cores": os.cpu_count(),
        "architecture": architecture,
        "engine": engine.where.split(" (")[0],
        "image": image,
        "function": function_id,
        "event": f"events/{function.package_dir}/retry.json",
        "cold_seconds": _seconds(cold),
        "warm_seconds": _seconds(warm),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def _commit() -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or None


def write(document: dict[str, Any], path: Path = MEASURED) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def markdown_table(document: dict[str, Any]) -> str:
    """docs/running-locally.md's table: cold and warm seconds, with how they were measured."""
    cold, warm = document["cold_seconds"], document["warm_seconds"]

    def row(label: str, figures: dict[str, Any]) -> str:
        return (
            f"| {label} | {figures['median']:.2f} s | {figures['min']:.2f} to {figures['max']:.2f} s "
            f"| {len(figures['runs'])} |"
        )

    return "\n".join(
        [
            "| invoke | median | range | runs |",
            "| --- | ---: | ---: | ---: |",
            row("cold: `sam local invoke`, a new container", cold),
            row("warm: `start-lambda --warm-containers EAGER`, boto3", warm),
            "",
            f"`{document['function']}` with `{document['event']}` (a duplicate delivery, after its tick ran once), "
            f"{document['architecture']} (native), on {document['engine']} with `{document['image']}`; measured "
            f"{document['measured_at']} at commit {document['commit']} on {document['cores']} cores, load average "
            f"{document['load_before']:g} before and {document['load_after']:g} after. "
            "`clockless engine measure` writes `bench/sam-local.json`, `make docs` this table.",
        ]
    )
