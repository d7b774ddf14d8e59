"""`make bench`, the parts about what ships: cold start (each handler imported in a fresh
interpreter, against `import boto3` alone) and artifacts (what `sam build` produces, against
Lambda's 250 MB limit, and the layer without the packages the python3.13 runtime already has).

A fresh interpreter with `-S` and only the paths a function sees in Lambda (its code, its layer,
the runtime's SDK) runs `probe.py`, so nothing of the dev venv leaks into what is measured.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from clockless_tools.bench.harness import (
    CLEANUP_JOB,
    OVERHEAD_WORKLOADS,
    WINDOW_JOB,
    BenchError,
    BenchSizes,
    Figure,
    Harness,
    effect_of,
    expected_effect,
)
from clockless_tools.template.model import Template

COLD_START_RATIO_TARGET: Final = 1.5
# "250 MB: the maximum size of the contents of a deployment package, including layers (unzipped)".
LAMBDA_UNZIPPED_LIMIT_BYTES: Final = 250 * 2**20
MB: Final = 2**20
# The Lambda Python runtimes include boto3 and its dependencies (AWS docs, "Working with .zip file
# archives for Python Lambda functions"): these distributions, and nothing else we use.
RUNTIME_PROVIDED: Final = frozenset(
    {"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"}
)
PROBE: Final = Path(__file__).with_name("probe.py")


# --------------------------------------------------------------------------- 4. cold start


@dataclass(frozen=True, slots=True)
class ImportSetup:
    """Where a fresh interpreter finds the code: per function and for the `import boto3` baseline."""

    name: str
    description: str
    function_paths: Mapping[str, list[Path]]
    baseline_paths: list[Path]
    isolated: bool  # -S: no site-packages, only the paths given (what a Lambda function sees)


def source_setup(template: Template) -> ImportSetup:
    """The source tree, dependencies from the dev venv (with bytecode cached, as after `make test`)."""
    paths = {}
    for logical_id, fn in template.functions.items():
        layers = [template.root / uri for uri in map(template.layer_content_uri, fn.layers) if uri is not None]
        paths[logical_id] = [template.root / fn.code_uri, *layers]
    return ImportSetup("source", "source tree over the dev venv (bytecode cached)", paths, [], isolated=False)


def built_setup(
    template: Template,
    build_dir: Path,
    layer_dirs: Mapping[str, Path],
    runtime_dir: Path,
    *,
    name: str,
    description: str,
) -> ImportSetup:
    """Built functions and layers over a stand-in of the runtime's SDK, isolated from the venv."""
    paths = {}
    for logical_id, fn in template.functions.items():
        layers = [
            layer_dirs[ref["Ref"]] for ref in fn.layers if isinstance(ref, Mapping) and ref.get("Ref") in layer_dirs
        ]
        paths[logical_id] = [build_dir / logical_id, *layers, runtime_dir]
    return ImportSetup(name, description, paths, [runtime_dir], isolated=True)


def _probe(
    arguments: Sequence[str], *, isolated: bool, extra_env: Mapping[str, str] | None = None, importtime: bool = False
) -> subprocess.CompletedProcess[str]:
    flags = (["-S"] if isolated else []) + (["-X", "importtime"] if importtime else [])
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(extra_env or {})}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *flags, str(PROBE), *arguments], capture_output=True, text=True, env=env, check=False
    )


def import_seconds(
    module: str, paths: Sequence[Path], *, isolated: bool, env: Mapping[str, str] | None = None
) -> float:
    done = _probe(["import", module, *map(str, paths)], isolated=isolated, extra_env=env)
    if done.returncode != 0:
        raise BenchError(f"importing {module} failed: {done.stderr.strip().splitlines()[-1:]}")
    return float(done.stdout.strip().splitlines()[-1])


IMPORT_GROUPS: Final = {
    "boto3": "boto3/botocore and their dependencies",
    "botocore": "boto3/botocore and their dependencies",
    "s3transfer": "boto3/botocore and their dependencies",
    "urllib3": "boto3/botocore and their dependencies",
    "jmespath": "boto3/botocore and their dependencies",
    "dateutil": "boto3/botocore and their dependencies",
    "six": "boto3/botocore and their dependencies",
    "aws_lambda_powertools": "aws_lambda_powertools",
    "pynamodb": "pynamodb",
    "typing_extensions": "typing_extensions",
    "clockless": "clockless (the kit)",
}


def import_attribution(
    module: str, paths: Sequence[Path], *, isolated: bool, env: Mapping[str, str] | None = None
) -> dict[str, float]:
    """`python -X importtime`, self time summed by who owns the module (stdlib counted apart)."""
    done = _probe(["import", module, *map(str, paths)], isolated=isolated, extra_env=env, importtime=True)
    if done.returncode != 0:
        raise BenchError(f"importing {module} failed under -X importtime")
    function_package = module.split(".", 1)[0]
    totals: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line[len("import time:") :].split("|", 2)
        top = name.strip().split(".", 1)[0]
        if top == function_package:
            group = "the function's package"
        elif top in IMPORT_GROUPS:
            group = IMPORT_GROUPS[top]
        elif top in sys.stdlib_module_names or top.startswith("_"):
            group = "standard library"
        else:
            group = "other"
        totals[group] += int(self_us)
    total = sum(totals.values()) or 1
    return {group: round(100 * us / total, 1) for group, us in totals.most_common()}


def measure_cold_start(
    template: Template, setups: Sequence[ImportSetup], sizes: BenchSizes, environments: Mapping[str, Mapping[str, str]]
) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {"repeats": sizes.imports, "setups": {}}
    for setup in setups:
        samples: dict[str, list[float]] = {"boto3": []}
        modules = {logical_id: fn.handler.rpartition(".")[0] for logical_id, fn in template.functions.items()}
        for logical_id in modules:
            samples[logical_id] = []
        # Interleaved, so a noisy moment on the machine spreads over every module alike.
        for _ in range(sizes.imports):
            samples["boto3"].append(import_seconds("boto3", setup.baseline_paths, isolated=setup.isolated))
            for logical_id, module in modules.items():
                samples[logical_id].append(
                    import_seconds(
                        module,
                        setup.function_paths[logical_id],
                        isolated=setup.isolated,
                        env=environments.get(logical_id),
                    )
                )
        baseline_ms = statistics.median(samples["boto3"]) * 1000
        rows = {"boto3_ms": round(baseline_ms, 1)}
        for logical_id, module in modules.items():
            handler_ms = statistics.median(samples[logical_id]) * 1000
            rows[f"{logical_id}_ms"] = round(handler_ms, 1)
            figures.append(
                Figure(
                    f"cold_start.{setup.name}.{logical_id}.import_ms",
                    f"import {module} ({setup.description})",
                    "ms",
                    handler_ms,
                    baseline_ms,
                    "import boto3 alone, same setup",
                    target=f"ratio ≤ {COLD_START_RATIO_TARGET}",
                    met=handler_ms / baseline_ms <= COLD_START_RATIO_TARGET,
                )
            )
        details["setups"][setup.name] = {
            "description": setup.description,
            "median_ms": rows,
            # Where the time goes (python -X importtime, self time by owner, percent of the total).
            "importtime_share_percent": {
                logical_id: import_attribution(
                    module, setup.function_paths[logical_id], isolated=setup.isolated, env=environments.get(logical_id)
                )
                for logical_id, module in modules.items()
            },
        }
    return figures, details


# ---------------------------------------------------------------------------- 5. artifacts


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
    """Deliver one tick in a fresh interpreter that sees only the setup's paths, against moto."""
    workload = OVERHEAD_WORKLOADS[job]
    harness.reset_tables()
    harness.seed(workload, in_process=True)
    function_id = harness.functions[job]
    module = harness.template.function(function_id).handler.rpartition(".")[0]
    event = json.dumps(harness.tick(job).to_event())
    done = _probe(
        ["tick", module, event, *map(str, setup.function_paths[function_id])],
        isolated=setup.isolated,
        extra_env=harness.runtime.environment(function_id),
    )
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    response = json.loads(done.stdout.strip().splitlines()[-1])
    effect = effect_of(job, response.get("summary") or {}) if response.get("outcome") == "executed" else None
    return {"ok": effect == expected_effect(job, workload), "outcome": response.get("outcome"), "effect": effect}


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
        "limit_mb": LAMBDA_UNZIPPED_LIMIT_BYTES / MB,
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
                f"artifacts.{layer_id}.unzipped_mb",
                f"layer {layer_id} as `sam build` builds it, unzipped",
                "MB",
                layer_bytes / MB,
                LAMBDA_UNZIPPED_LIMIT_BYTES / MB,
                "Lambda's unzipped limit (function + layers)",
                target="< limit",
                met=layer_bytes < LAMBDA_UNZIPPED_LIMIT_BYTES,
            ),
            Figure(
                f"artifacts.{layer_id}.runtime_provided_mb",
                f"layer {layer_id}: packages the python3.13 runtime already ships",
                "MB",
                sum(provided.values()) / MB,
                layer_bytes / MB,
                "the whole layer",
                target="0 unless the README states why",
                met=not provided,
            ),
            Figure(
                f"artifacts.{layer_id}.lean_unzipped_mb",
                f"layer {layer_id} without them, with bytecode",
                "MB",
                lean_bytes / MB,
                layer_bytes / MB,
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
                f"artifacts.{logical_id}.with_layers_unzipped_mb",
                f"{logical_id} + its layers, unzipped",
                "MB",
                with_layers / MB,
                LAMBDA_UNZIPPED_LIMIT_BYTES / MB,
                "Lambda's unzipped limit",
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
