"""4. Cold start: each handler imported in a fresh interpreter, against `import boto3` alone, from the
source tree and from what `sam build` produces.

A fresh interpreter with `-S` and only the paths a function sees in Lambda (its code, its layer,
the runtime's SDK) runs `probe.py`, so nothing of the dev venv leaks into what is measured.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from clockless_tools.bench.results import BenchError, BenchSizes, Figure
from clockless_tools.bench.spread import repeat_until_decided
from clockless_tools.template.model import Template

COLD_START_RATIO_TARGET: Final = 1.5
# Lambda's quota page says "250 MB" for a function's unzipped package with its layers; the limit it
# enforces is 262,144,000 bytes, which is 250 MiB.
MIB: Final = 2**20
LAMBDA_UNZIPPED_LIMIT_BYTES: Final = 250 * MIB
# The Lambda Python runtimes include boto3 and its dependencies (AWS docs, "Working with .zip file
# archives for Python Lambda functions"): these distributions, and nothing else we use.
RUNTIME_PROVIDED: Final = frozenset(
    {"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"}
)
PROBE: Final = Path(__file__).with_name("probe.py")


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


def run_probe(
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
    done = run_probe(["import", module, *map(str, paths)], isolated=isolated, extra_env=env)
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
    done = run_probe(["import", module, *map(str, paths)], isolated=isolated, extra_env=env, importtime=True)
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
    details: dict[str, Any] = {"repeats": {"minimum": sizes.imports, "maximum": sizes.imports_max}, "setups": {}}
    for setup in setups:
        samples: dict[str, list[float]] = {"boto3": []}
        modules = {logical_id: fn.handler.rpartition(".")[0] for logical_id, fn in template.functions.items()}
        for logical_id in modules:
            samples[logical_id] = []

        def one_round(
            setup: ImportSetup = setup, samples: dict[str, list[float]] = samples, modules: dict[str, str] = modules
        ) -> dict[str, float]:
            """boto3, then every handler: interleaved, so a noisy moment on the machine spreads over
            every module alike, and each ratio is taken against the baseline of its own round."""
            baseline = import_seconds("boto3", setup.baseline_paths, isolated=setup.isolated)
            samples["boto3"].append(baseline)
            ratios = {}
            for logical_id, module in modules.items():
                seconds = import_seconds(
                    module, setup.function_paths[logical_id], isolated=setup.isolated, env=environments.get(logical_id)
                )
                samples[logical_id].append(seconds)
                ratios[logical_id] = seconds / baseline
            return ratios

        estimates, _ = repeat_until_decided(
            one_round,
            dict.fromkeys(modules, COLD_START_RATIO_TARGET),
            minimum=sizes.imports,
            maximum=max(sizes.imports, sizes.imports_max),
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
                    met=estimates[logical_id].decide(COLD_START_RATIO_TARGET),
                    ratio_estimate=estimates[logical_id],
                )
            )
        details["setups"][setup.name] = {
            "description": setup.description,
            "median_ms": rows,
            "rounds": len(samples["boto3"]),
            "ratio": {logical_id: estimate.describe() for logical_id, estimate in estimates.items()},
            # Where the time goes (python -X importtime, self time by owner, percent of the total).
            "importtime_share_percent": {
                logical_id: import_attribution(
                    module, setup.function_paths[logical_id], isolated=setup.isolated, env=environments.get(logical_id)
                )
                for logical_id, module in modules.items()
            },
        }
    return figures, details
