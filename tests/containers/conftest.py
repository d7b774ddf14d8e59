"""The engine, the image, two embedded stacks and SAM CLI's build, once per module: `make
test-containers` brings up the engine and builds the image, and fails the tests where either is
missing rather than skipping them. A pull attempt on the project's dockerd fails the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clockless_tools.engine.dockerd import bridge_gateway, find_engine, log_offset, pull_attempts
from clockless_tools.engine.runtime_image import host_architecture, image_present, runtime_image
from tests.containers.harness import SamLocal, Stack, free_port


@pytest.fixture(scope="module")
def sam_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamLocal]:
    engine = find_engine()
    assert engine is not None, "no container engine answers: run these tests with `make test-containers`"
    image = runtime_image(host_architecture()).tag
    assert image_present(engine, image), f"the runtime image {image} is missing: `make runtime-image` builds it"
    offset = log_offset()
    root = tmp_path_factory.mktemp("sam-local")
    stack = Stack(root / "sam-local.json", free_port(), host=bridge_gateway(engine))
    stack.up()
    sam = SamLocal(engine, image, stack, build_dir=root / "build", env_file=root / "env.local.json")
    try:
        sam.build()
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
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A second stack with the same seeded data, for `clockless invoke`."""
    stack = Stack(tmp_path_factory.mktemp("reference") / "reference.json", free_port())
    stack.up()
    try:
        yield stack
    finally:
        stack.down()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
