"""The layer ships exactly the runtime versions the tests run against."""

from __future__ import annotations

import tomllib
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        requirement = line.split("#", 1)[0].strip()
        if requirement:
            name, _, version = requirement.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def layer_pins(path: Path = PROJECT_ROOT / "layers/clockless/requirements.txt") -> dict[str, str]:
    return _pins(path.read_text(encoding="utf-8").splitlines())


def project_pins(path: Path = PROJECT_ROOT / "pyproject.toml") -> dict[str, str]:
    return _pins(tomllib.loads(path.read_text(encoding="utf-8"))["project"]["dependencies"])


def drift(layer: dict[str, str], project: dict[str, str]) -> list[str]:
    problems = [f"{name}: layer pins {version or 'no version'}" for name, version in layer.items() if not version]
    for name, version in layer.items():
        if project.get(name) != version:
            problems.append(f"{name}: layer {version}, pyproject {project.get(name, 'absent')}")
    return problems


def test_layer_requirements_match_the_project_pins() -> None:
    assert drift(layer_pins(), project_pins()) == []


def test_drift_is_reported(tmp_path: Path) -> None:
    planted = tmp_path / "requirements.txt"
    planted.write_text("aws-lambda-powertools==3.0.0\npynamodb\n", encoding="utf-8")

    problems = drift(layer_pins(planted), project_pins())

    assert "aws-lambda-powertools: layer 3.0.0, pyproject 3.37.0" in problems
    assert "pynamodb: layer pins no version" in problems


def unpinned_dependencies(requirements: Path, runtime_provided: frozenset[str]) -> list[str]:
    """Dependencies of the layer's packages that neither requirements.txt nor the runtime provides.

    The layer is installed with --no-deps (layers/clockless/Makefile), so anything missing here
    would be missing in Lambda, not in the tests.
    """
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    listed = {canonicalize_name(name) for name in layer_pins(requirements)}
    missing = []
    for name in sorted(listed):
        for spec in importlib.metadata.requires(name) or []:
            requirement = Requirement(spec)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            dependency = canonicalize_name(requirement.name)
            if dependency not in listed and dependency not in runtime_provided:
                missing.append(f"{dependency} (needed by {name})")
    return missing


def test_the_layer_pins_its_whole_closure_except_the_runtime_sdk() -> None:
    from clockless_tools.bench.cold_start import RUNTIME_PROVIDED

    assert unpinned_dependencies(PROJECT_ROOT / "layers/clockless/requirements.txt", RUNTIME_PROVIDED) == []


def test_a_dependency_left_out_of_the_layer_is_reported(tmp_path: Path) -> None:
    from clockless_tools.bench.cold_start import RUNTIME_PROVIDED

    planted = tmp_path / "requirements.txt"
    planted.write_text("aws-lambda-powertools==3.37.0\npynamodb==6.1.0\n", encoding="utf-8")

    assert unpinned_dependencies(planted, RUNTIME_PROVIDED) == ["typing-extensions (needed by aws-lambda-powertools)"]
