"""5. Artifacts: what `sam build` produces against Lambda's unzipped limit (250 MiB), and the layer
without the packages the python3.13 runtime already ships. Sizes are in MiB (2**20 bytes), each
label with its exact bytes."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from clockless_tools.bench.cold_start import (
    LAMBDA_UNZIPPED_LIMIT_BYTES,
    MIB,
    RUNTIME_PROVIDED,
    ImportSetup,
    built_setup,
    run_probe,
)
from clockless_tools.bench.harness import Harness, partitions_sent
from clockless_tools.bench.overhead import OVERHEAD_WORKLOADS
from clockless_tools.bench.results import CLEANUP_JOB, WINDOW_JOB, BenchError, BenchSizes, Figure
from clockless_tools.template.model import Template

_LIMIT_LABEL: Final = f"Lambda's unzipped limit, function + layers: {LAMBDA_UNZIPPED_LIMIT_BYTES:,} bytes"


def directory_bytes(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file() and not entry.is_symlink())


def distribution_bytes(site: Path) -> dict[str, int]:
    """Bytes per installed distribution in a layer's python/ directory, from each RECORD; bytecode
    compiled after the install counts for the package it was compiled from, and files no RECORD
    knows (the layer's own code) under their top-level name."""
    owner_of_file: dict[str, str] = {}
    owner_of_top: dict[str, str] = {}
    for record in site.glob("*.dist-info/RECORD"):
        name = _normalize(importlib.metadata.PathDistribution(record.parent).metadata["Name"])
        for line in record.read_text(encoding="utf-8").splitlines():
            relative = line.split(",", 1)[0]
            if relative and not relative.startswith(".."):
                owner_of_file[relative] = name
                top = relative.split("/", 1)[0]
                owner_of_top.setdefault(top.removesuffix(".py"), name)
    sizes: Counter[str] = Counter()
    for entry in site.rglob("*"):
        if not entry.is_file():
            continue
        path = entry.relative_to(site)
        top = path.parts[0]
        if top == "__pycache__":  # a top-level module's bytecode, e.g. typing_extensions.cpython-313.pyc
            top = path.parts[-1].split(".", 1)[0]
        owner = owner_of_file.get(path.as_posix()) or owner_of_top.get(top) or f"{top} (not installed by pip)"
        sizes[owner] += entry.stat().st_size
    return dict(sizes.most_common())


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def installed_versions(site: Path) -> dict[str, str]:
    """Name -> version of every distribution pip installed into a layer's python/ directory."""
    found = {}
    for info in site.glob("*.dist-info"):
        metadata = importlib.metadata.PathDistribution(info).metadata
        found[_normalize(metadata["Name"])] = metadata["Version"]
    return dict(sorted(found.items()))


def copy_runtime_sdk(target: Path) -> dict[str, str]:
    """A stand-in for what the python3.13 runtime ships: boto3 and its dependencies, copied from
    this venv (with bytecode, as a runtime ships them) at the versions pyproject.toml pins."""
    versions = {}
    for name in sorted(RUNTIME_PROVIDED):
        distribution = importlib.metadata.distribution(name)
        versions[name] = distribution.version
        for file in distribution.files or []:
            # Only what is importable: a RECORD also lists scripts outside site-packages
            # (jmespath's ../../../bin/jp.py), which must not land outside the target.
            if file.parts[0] == ".." or file.is_absolute():
                continue
            source = Path(str(distribution.locate_file(file)))
            if source.is_file():
                destination = target / file
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)
    return versions


@dataclass(frozen=True, slots=True)
class SamBuild:
    build_dir: Path
    seconds: float


def sam_build(
    sam: Path, source: Path, build_dir: Path, *, only: str | None = None, env: Mapping[str, str] | None = None
) -> SamBuild:
    command = [str(sam), "build", "--build-dir", str(build_dir), *([only] if only else [])]
    environment = {
        **os.environ,
        # `sam build` wants the runtime's Python (3.13) on PATH: this interpreter's.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SAM_CLI_TELEMETRY": "0",
        **(env or {}),
    }
    started = time.perf_counter()
    done = subprocess.run(command, cwd=source, capture_output=True, text=True, env=environment, check=False)
    if done.returncode != 0:
        raise BenchError(f"sam build failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    return SamBuild(build_dir, time.perf_counter() - started)


def copy_sources(template: Template, target: Path) -> Path:
    """What `sam build` reads (template.yaml, layers/, functions/) in a scratch directory, so its
    caches and our changes to requirements never touch the working tree."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copy2(template.path, target / "template.yaml")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for directory in ("layers", "functions"):
        shutil.copytree(template.root / directory, target / directory, ignore=ignore)
    return target


def compile_bytecode(directory: Path) -> None:
    # unchecked-hash: a .pyc Python trusts without comparing mtimes, which a zip does not keep exactly.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", str(directory)],
        check=True,
        capture_output=True,
    )


def layer_ids(template: Template) -> dict[str, str]:
    """Logical id -> ContentUri of every layer the template builds."""
    return {
        logical_id: str((resource.get("Properties") or {}).get("ContentUri"))
        for logical_id, resource in template.resources_of_type("AWS::Serverless::LayerVersion").items()
    }


def run_tick_in(setup: ImportSetup, harness: Harness, job: str) -> Mapping[str, Any]:
    """Deliver one tick in a fresh interpreter that sees only the setup's paths, against moto: the
    coordinator claims it and fans it out (its workers are not run here)."""
    workload = OVERHEAD_WORKLOADS[job]
    harness.reset_tables()
    harness.seed(workload, in_process=True)
    function_id = harness.functions[job]
    module = harness.template.function(function_id).handler.rpartition(".")[0]
    event = json.dumps(harness.tick(job).to_event())
    done = run_probe(
        ["tick", module, event, *map(str, setup.function_paths[function_id])],
        isolated=setup.isolated,
        extra_env={**harness.runtime.environment(function_id), **harness.work_environment(job)},
    )
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    response = json.loads(done.stdout.strip().splitlines()[-1])
    try:
        partitions: int | None = partitions_sent(job, response)
    except BenchError:
        partitions = None
    return {"ok": partitions is not None, "outcome": response.get("outcome"), "partitions_sent": partitions}


def measure_artifacts(
    harness: Harness, sam: Path, work: Path, sizes: BenchSizes
) -> tuple[list[Figure], dict[str, Any], list[ImportSetup]]:
    """`sam build` as `make build` runs it, then the layer without what the runtime ships (built by
    SAM with PIP_NO_DEPS=1 and the missing pins added, then compiled to bytecode), each checked by
    delivering a real tick in an interpreter that sees only that layer and the runtime's SDK."""
    template = harness.template
    layers = layer_ids(template)
    source = copy_sources(template, work / "src")
    built = sam_build(sam, source, work / "sam-build")
    runtime_dir = work / "runtime-sdk"
    if runtime_dir.exists():
        shutil.rmtree(runtime_dir)
    runtime_versions = copy_runtime_sdk(runtime_dir)

    figures: list[Figure] = []
    details: dict[str, Any] = {
        "sam_build_seconds": round(built.seconds, 1),
        "runtime_sdk_stand_in": runtime_versions,
        "limit_mib": LAMBDA_UNZIPPED_LIMIT_BYTES / MIB,
        "layers": {},
        "functions": {},
    }
    lean_dirs: dict[str, Path] = {}
    for layer_id, content_uri in layers.items():
        site = built.build_dir / layer_id / "python"
        by_distribution = distribution_bytes(site)
        layer_bytes = directory_bytes(built.build_dir / layer_id)
        provided = {name: size for name, size in by_distribution.items() if name in RUNTIME_PROVIDED}
        requirements = template.root / content_uri / "requirements.txt"
        # What pip resolved for the layer: the requirements and everything they pull in.
        closure = installed_versions(site)
        listed = {
            _normalize(line.split("==", 1)[0].strip())
            for line in requirements.read_text(encoding="utf-8").splitlines()
            if "==" in line and not line.lstrip().startswith("#")
        }
        missing_pins = {
            name: version for name, version in closure.items() if name not in RUNTIME_PROVIDED and name not in listed
        }

        lean_requirements = source / content_uri / "requirements.txt"
        with lean_requirements.open("a", encoding="utf-8") as pins:
            pins.writelines(f"{name}=={version}\n" for name, version in missing_pins.items())
        lean_build = sam_build(sam, source, work / "lean-build", only=layer_id, env={"PIP_NO_DEPS": "1"})
        lean_dir = work / "lean-layer" / layer_id
        if lean_dir.exists():
            shutil.rmtree(lean_dir)
        shutil.copytree(lean_build.build_dir / layer_id, lean_dir)
        compile_bytecode(lean_dir)
        lean_dirs[layer_id] = lean_dir / "python"
        lean_bytes = directory_bytes(lean_dir)
        lean_distributions = distribution_bytes(lean_dir / "python")

        figures += [
            Figure(
                f"artifacts.{layer_id}.unzipped_mib",
                f"layer {layer_id} as `sam build` builds it, unzipped ({layer_bytes:,} bytes)",
                "MiB",
                layer_bytes / MIB,
                LAMBDA_UNZIPPED_LIMIT_BYTES / MIB,
                _LIMIT_LABEL,
                target="< limit",
                met=layer_bytes < LAMBDA_UNZIPPED_LIMIT_BYTES,
            ),
            Figure(
                f"artifacts.{layer_id}.runtime_provided_mib",
                f"layer {layer_id}: packages the python3.13 runtime already ships",
                "MiB",
                sum(provided.values()) / MIB,
                layer_bytes / MIB,
                "the whole layer",
                target="0 unless the README states why",
                met=not provided,
            ),
            Figure(
                f"artifacts.{layer_id}.lean_unzipped_mib",
                f"layer {layer_id} without them, with bytecode ({lean_bytes:,} bytes)",
                "MiB",
                lean_bytes / MIB,
                layer_bytes / MIB,
                "layer as `sam build` builds it",
            ),
        ]
        details["layers"][layer_id] = {
            "unzipped_bytes": layer_bytes,
            "distributions_bytes": by_distribution,
            "runtime_provided": sorted(provided),
            "installed": closure,
            "lean": {
                "recipe": "sam build with PIP_NO_DEPS=1, requirements.txt plus the pins below, then "
                "python -m compileall --invalidation-mode unchecked-hash",
                "added_pins": missing_pins,
                "unzipped_bytes": lean_bytes,
                "distributions_bytes": lean_distributions,
            },
        }
    for logical_id, fn in template.functions.items():
        function_bytes = directory_bytes(built.build_dir / logical_id)
        with_layers = function_bytes + sum(
            directory_bytes(built.build_dir / ref["Ref"])
            for ref in fn.layers
            if isinstance(ref, Mapping) and ref.get("Ref") in layers
        )
        details["functions"][logical_id] = {"unzipped_bytes": function_bytes, "with_layers_bytes": with_layers}
        figures.append(
            Figure(
                f"artifacts.{logical_id}.with_layers_unzipped_mib",
                f"{logical_id} + its layers, unzipped ({with_layers:,} bytes)",
                "MiB",
                with_layers / MIB,
                LAMBDA_UNZIPPED_LIMIT_BYTES / MIB,
                _LIMIT_LABEL,
                target="< limit",
                met=with_layers < LAMBDA_UNZIPPED_LIMIT_BYTES,
            )
        )
    layer_dirs = {layer_id: built.build_dir / layer_id / "python" for layer_id in layers}
    setups = [
        built_setup(
            template, built.build_dir, layer_dirs, runtime_dir, name="built", description="as `sam build` builds it"
        ),
        built_setup(
            template, built.build_dir, lean_dirs, runtime_dir, name="lean", description="lean layer with bytecode"
        ),
    ]
    details["ticks_with_only_the_runtime_sdk"] = {
        setup.name: {job: run_tick_in(setup, harness, job) for job in (WINDOW_JOB, CLEANUP_JOB)} for setup in setups
    }
    return figures, details, setups
