"""`clockless engine up|down|status|image|emulation|measure|timings`: the container engine and runtime
image `sam local` runs on, and what an invoke through it takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from clockless_tools.cli.common import fail, line_stdout, writable
from clockless_tools.engine.dockerd import (
    EngineError,
    bridge_gateway,
    find_engine,
    require_engine,
    start_engine,
    stop_engine,
)
from clockless_tools.engine.emulation import CPUS, register, unregister
from clockless_tools.engine.invoke_seconds import (
    DEFAULT_FUNCTION,
    DEFAULT_RUNS,
    MEASURED,
    markdown_table,
    measure,
    write,
)
from clockless_tools.engine.runtime_image import (
    ARCHITECTURES,
    build_runtime_image,
    host_architecture,
    image_present,
    runtime_image,
)
from clockless_tools.template.loader import PROJECT_ROOT
from clockless_tools.template.model import Template

app = typer.Typer(no_args_is_help=True, help=__doc__)


@app.command("up")
def engine_up() -> None:
    """Use your Docker (DOCKER_HOST, /var/run/docker.sock), else start the project's own dockerd (root)."""
    try:
        engine, started = start_engine()
    except EngineError as error:
        raise fail(str(error)) from None
    line_stdout.print(f"{'started' if started else 'using'} {engine.where}; DOCKER_HOST={engine.host}")


@app.command("down")
def engine_down() -> None:
    """Stop the project's dockerd and its containers (a Docker of your own is left alone)."""
    line_stdout.print(stop_engine())


@app.command("status")
def engine_status(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of text, for scripts. E.g. --json")
    ] = False,
) -> None:
    """Which engine `sam local` would use, and whether the runtime image is on it."""
    try:
        engine = find_engine()
        image = runtime_image(host_architecture())
    except EngineError as error:
        raise fail(str(error)) from None
    status = {
        "engine": None if engine is None else engine.where,
        "docker_host": None if engine is None else engine.host,
        "image": image.tag,
        "image_present": engine is not None and image_present(engine, image.tag),
    }
    if as_json:
        print(json.dumps(status, indent=2))
        return
    if engine is None:
        line_stdout.print(f"no engine answers (`make engine` starts one); the runtime image would be {image.tag}")
        return
    present = "on it" if status["image_present"] else "not on it (`make runtime-image`)"
    line_stdout.print(f"{engine.where}, DOCKER_HOST={engine.host}; runtime image {image.tag} {present}")


@app.command("host")
def engine_host() -> None:
    """Print the DOCKER_HOST of the engine in use, to export before `sam local`."""
    try:
        print(require_engine().host)
    except EngineError as error:
        raise fail(str(error)) from None


@app.command("gateway")
def engine_gateway() -> None:
    """Print the bridge's gateway address: `clockless local up --host` on Linux, so containers reach it."""
    try:
        print(bridge_gateway(require_engine()))
    except EngineError as error:
        raise fail(str(error)) from None


@app.command("image")
def engine_image(
    architecture: Annotated[
        str,
        typer.Option(
            "--architecture",
            help=f"Lambda architecture of the image ({', '.join(ARCHITECTURES)}); this machine's by default. "
            "E.g. --architecture x86_64",
        ),
    ] = "",
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Build it again even if cached. E.g. --rebuild")] = False,
    print_tag: Annotated[
        bool, typer.Option("--tag", help="Only print the image's tag (what --invoke-image takes). E.g. --tag")
    ] = False,
) -> None:
    """Build the stand-in python3.13 runtime image on the engine (cached; never pulls), print its tag."""
    try:
        if print_tag:
            print(runtime_image(architecture or host_architecture()).tag)
            return
        image, how = build_runtime_image(require_engine(), architecture or host_architecture(), rebuild=rebuild)
    except EngineError as error:
        raise fail(str(error)) from None
    line_stdout.print(f"{image.tag}: {how}")


@app.command("measure")
def engine_measure(
    function: Annotated[
        str, typer.Option("--function", help="The scheduled function timed. E.g. --function SessionCleanupFunction")
    ] = DEFAULT_FUNCTION,
    runs: Annotated[
        int, typer.Option("--runs", min=1, max=20, help="Invokes timed of each kind. E.g. --runs 5")
    ] = DEFAULT_RUNS,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the figures. E.g. -o /tmp/sam-local.json")
    ] = MEASURED,
) -> None:
    """Time a cold `sam local invoke` and a warm start-lambda invoke of a job's duplicate delivery,
    natively, on the engine in use (never pulling) into bench/sam-local.json (`make docs` quotes it)."""
    template = Template.load(PROJECT_ROOT / "template.yaml")
    scheduled = sorted(template.function_for_job(job).logical_id for job in template.jobs)
    if function not in scheduled:
        raise fail(f"--function {function}: not a scheduled function of template.yaml; they are {', '.join(scheduled)}")
    writable(output, "--output")
    try:
        document = measure(function, runs)
    except EngineError as error:
        raise fail(str(error)) from None
    write(document, output)
    line_stdout.print(
        f"{function}: cold {document['cold_seconds']['median']:.2f} s, warm {document['warm_seconds']['median']:.2f} s "
        f"(medians of {runs}); written to {output}; `make docs` puts them in docs/running-locally.md"
    )


@app.command("timings")
def engine_timings(
    measured: Annotated[
        Path, typer.Option("--measured", help="The figures file. E.g. --measured bench/sam-local.json")
    ] = MEASURED,
) -> None:
    """The measured cold and warm invoke seconds (`clockless engine measure`) as docs/running-locally.md's table."""
    try:
        document = json.loads(measured.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise fail(f"cannot read {measured}: {error}; run `clockless engine measure`") from None
    print(markdown_table(document))


@app.command("emulation")
def engine_emulation(
    architecture: Annotated[
        str, typer.Option("--architecture", help="The architecture to run under qemu. E.g. --architecture arm64")
    ] = "arm64",
    off: Annotated[bool, typer.Option("--off", help="Remove the registration instead. E.g. --off")] = False,
) -> None:
    """Register Debian's qemu-user-static with binfmt_misc (root), so the other architecture's image
    builds (`make runtime-image ARCH=arm64`) and its functions run here under emulation."""
    if architecture not in CPUS:
        raise fail(f"--architecture {architecture}: one of {', '.join(CPUS)}")
    if architecture == host_architecture():
        raise fail(f"--architecture {architecture}: this machine runs it natively")
    try:
        line_stdout.print(unregister(architecture) if off else register(architecture))
    except EngineError as error:
        raise fail(str(error)) from None
