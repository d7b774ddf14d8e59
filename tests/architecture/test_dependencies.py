"""The layer ships exactly what uv.lock pins for the runtime, minus what the Lambda runtime ships.

uv.lock pins the whole closure with hashes; `make lock` exports the layer's requirements.txt
from it. These tests read both files, so a hand edit of either, or a lock that moved without a
re-export, fails the build with the package named.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.utils import canonicalize_name

from clockless_tools.bench.cold_start import RUNTIME_PROVIDED

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOCK = PROJECT_ROOT / "uv.lock"
LAYER_REQUIREMENTS = PROJECT_ROOT / "layers/clockless/requirements.txt"
# Where the layer runs: markers in the lock are evaluated for this interpreter, not the host's.
LAMBDA_ENVIRONMENT: Mapping[str, str] = {
    "python_version": "3.13",
    "python_full_version": "3.13.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "aarch64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}


@dataclass(frozen=True, slots=True)
class Pin:
    version: str
    hashes: frozenset[str]


def locked_runtime_closure(lock: Path = LOCK, root: str = "clockless") -> dict[str, Pin]:
    """Every package the project's runtime dependencies (not the dev extra) pull in, as locked."""
    packages: dict[str, Any] = {
        canonicalize_name(p["name"]): p for p in tomllib.loads(lock.read_text(encoding="utf-8"))["package"]
    }
    closure: dict[str, Pin] = {}
    pending: list[tuple[str, tuple[str, ...]]] = [(canonicalize_name(root), ())]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while pending:
        name, extras = pending.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        package = packages[name]
        if name != canonicalize_name(root):
            closure[name] = Pin(package["version"], frozenset(_hashes(package)))
        dependencies = list(package.get("dependencies", []))
        for extra in extras:
            dependencies += package.get("optional-dependencies", {}).get(extra, [])
        for dependency in dependencies:
            marker = dependency.get("marker")
            if marker and not Marker(marker).evaluate(dict(LAMBDA_ENVIRONMENT)):
                continue
            pending.append((canonicalize_name(dependency["name"]), tuple(sorted(dependency.get("extra", [])))))
    return closure


def _hashes(package: Mapping[str, Any]) -> Iterable[str]:
    if "sdist" in package:
        yield package["sdist"]["hash"]
    for wheel in package.get("wheels", []):
        yield wheel["hash"]


_REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;\\]+)")


def requirement_pins(path: Path) -> dict[str, Pin]:
    """name -> version and hashes of a requirements file in pip's hash-checking format."""
    pins: dict[str, Pin] = {}
    for line in path.read_text(encoding="utf-8").replace("\\\n", " ").splitlines():
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        match = _REQUIREMENT.match(entry)
        assert match, f"{path.name}: not a pinned requirement: {entry!r}"
        hashes = frozenset(re.findall(r"--hash=(sha256:[0-9a-f]{64})", entry))
        pins[canonicalize_name(match["name"])] = Pin(match["version"], hashes)
    return pins


def layer_drift(requirements: Mapping[str, Pin], locked: Mapping[str, Pin], shipped: frozenset[str]) -> list[str]:
    """What differs between the layer's requirements and the locked closure minus the runtime's SDK."""
    expected = {name: pin for name, pin in locked.items() if name not in shipped}
    problems = [
        f"{name}: locked {pin.version}, missing from the layer"
        for name, pin in expected.items()
        if name not in requirements
    ]
    for name, pin in sorted(requirements.items()):
        if name in shipped:
            problems.append(f"{name}: the python3.13 runtime ships it; the layer must not")
        elif name not in expected:
            problems.append(f"{name}: in the layer but not in the locked runtime closure")
        elif pin.version != expected[name].version:
            problems.append(f"{name}: layer {pin.version}, uv.lock {expected[name].version}")
        elif pin.hashes != expected[name].hashes:
            problems.append(f"{name}: the layer's hashes are not uv.lock's")
    return sorted(problems)


def test_the_layer_ships_exactly_the_locked_closure_minus_the_runtime_sdk() -> None:
    problems = layer_drift(requirement_pins(LAYER_REQUIREMENTS), locked_runtime_closure(), RUNTIME_PROVIDED)

    assert problems == [], "run `make lock` to re-export layers/clockless/requirements.txt:\n" + "\n".join(problems)


def test_the_locked_closure_reaches_past_the_direct_dependencies() -> None:
    # pynamodb -> botocore -> urllib3: the walk follows the lock's edges, not pyproject's list.
    closure = locked_runtime_closure()

    assert {"aws-lambda-powertools", "pynamodb", "tzdata", "botocore", "urllib3", "typing-extensions"} <= set(closure)
    assert not {"moto", "pytest"} & set(closure), "the dev extra leaked into the runtime closure"


def test_drift_between_layer_and_lock_is_reported(tmp_path: Path) -> None:
    locked = locked_runtime_closure()
    powertools, typing_ext = locked["aws-lambda-powertools"], locked["typing-extensions"]
    planted = tmp_path / "requirements.txt"
    planted.write_text(
        "# a hand edit\n"
        "aws-lambda-powertools==3.0.0"
        + "".join(f" \\\n    --hash={h}" for h in sorted(powertools.hashes))
        + "\ntyping-extensions=="
        + typing_ext.version
        + " \\\n    --hash=sha256:"
        + "0" * 64
        + "\n"
        "botocore==" + locked["botocore"].version + "\n"
        "requests==2.32.0\n",
        encoding="utf-8",
    )

    problems = layer_drift(requirement_pins(planted), locked, RUNTIME_PROVIDED)

    assert problems == [
        "aws-lambda-powertools: layer 3.0.0, uv.lock " + powertools.version,
        "botocore: the python3.13 runtime ships it; the layer must not",
        "pynamodb: locked " + locked["pynamodb"].version + ", missing from the layer",
        "requests: in the layer but not in the locked runtime closure",
        "typing-extensions: the layer's hashes are not uv.lock's",
        "tzdata: locked " + locked["tzdata"].version + ", missing from the layer",
    ]


def test_the_makefile_leaves_out_the_same_runtime_sdk_the_tests_assume() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    (line,) = [line for line in makefile.splitlines() if line.startswith("RUNTIME_SDK :=")]

    assert frozenset(line.split(":=", 1)[1].split()) == RUNTIME_PROVIDED


def test_every_installed_dependency_of_the_layer_is_in_it_or_in_the_runtime() -> None:
    """The installed packages' own metadata, read independently of the lock: the layer is installed
    with --no-deps, so anything missing here would be missing in Lambda, not in the tests."""
    import importlib.metadata

    from packaging.requirements import Requirement

    listed = set(requirement_pins(LAYER_REQUIREMENTS))
    missing = []
    for name in sorted(listed):
        for spec in importlib.metadata.requires(name) or []:
            requirement = Requirement(spec)
            if requirement.marker is not None and not requirement.marker.evaluate(dict(LAMBDA_ENVIRONMENT)):
                continue
            dependency = canonicalize_name(requirement.name)
            if dependency not in listed and dependency not in RUNTIME_PROVIDED:
                missing.append(f"{dependency} (needed by {name})")

    assert missing == []
