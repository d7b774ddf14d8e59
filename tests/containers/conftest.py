"""The engine, the image and SAM CLI's build once per session, two embedded stacks once per module:
`make test-containers` brings up the engine and builds the image, and fails the tests where either
is missing rather than skipping them. A pull attempt on the project's dockerd fails the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clockless_tools.engine.dockerd import bridge_gateway, log_offset, pull_attempts
from clockless_tools.engine.sam_local import free_port
from tests.conftest import PROJECT_ROOT
from tests.containers.harness import Built, SamLocal, Stack, build


@pytest.fixture(scope="module")
def project_root() -> Path:
    """The project the module's stacks and SAM run (a module may make a copy with more jobs)."""
    return PROJECT_ROOT


@pytest.fixture(scope="session")
def sam_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The project's build, once: every module of the project's own functions runs these."""
    return build(PROJECT_ROOT, tmp_path_factory.mktemp("sam-build") / "build")


@pytest.fixture(scope="module")
def sam_local(sam_build: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamLocal]:
    engine, image = sam_build.engine, sam_build.image
    offset = log_offset()
    root = tmp_path_factory.mktemp("sam-local")
    stack = Stack(root / "sam-local.json", free_port(), host=bridge_gateway(engine), root=sam_build.root)
    stack.up()
    sam = SamLocal(
        engine,
        image,
        stack,
        build_dir=sam_build.build_dir,
        env_file=root / "env.local.json",
        root=sam_build.root,
        parameters=sam_build.parameters,
    )
    try:
        sam.write_env_file()
        yield sam
    finally:
        stack.down()
    if engine.ours:
        attempts = pull_attempts(offset)
        assert attempts == [], "docker or SAM CLI tried to pull an image:\n" + "\n".join(attempts)
    # Every SAM command ran with pulls off.
    for command in sam.commands:
        if command[1] == "local":
            assert "--skip-pull-image" in command, command


@pytest.fixture(scope="module")
def reference(project_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A second stack with the same seeded data, for `clockless invoke`."""
    stack = Stack(tmp_path_factory.mktemp("reference") / "reference.json", free_port(), root=project_root)
    stack.up()
    try:
        yield stack
    finally:
        stack.down()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
