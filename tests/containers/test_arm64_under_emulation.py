"""The template's default architecture, arm64, on this x86_64 machine: `sam build` with
Architecture=arm64 (the layer's arm64 wheels), the stand-in arm64 image, and `sam local invoke`
of each scheduled function under qemu (`make emulation`: Debian's qemu-user-static registered with
binfmt_misc). Each answers its malformed sample as `clockless invoke` does: the handler, the kit
and the layer's compiled packages load and run on arm64. A whole tick is not run here: under
emulation a coordinator's run is slow enough to near its Timeout on a loaded machine
(docs/running-locally.md, "The architecture").

Slow, in containers, under qemu: `make test-emulation`."""

from __future__ import annotations

import json

import pytest

from clockless_tools.engine.dockerd import docker
from clockless_tools.engine.emulation import emulated
from tests.conftest import PROJECT_ROOT
from tests.containers.harness import Built, SamLocal, Stack, build, response_of
from tests.jobs import Job, jobs

pytestmark = [pytest.mark.slow, pytest.mark.containers, pytest.mark.emulation]

ARCHITECTURE = "arm64"


@pytest.fixture(scope="module")
def sam_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    assert emulated(ARCHITECTURE), f"{ARCHITECTURE} does not run under qemu here: `make emulation` registers it"
    return build(PROJECT_ROOT, tmp_path_factory.mktemp("arm64") / "build", ARCHITECTURE)


@pytest.mark.parametrize("job", jobs(), ids=lambda job: job.name)
def test_a_function_built_for_arm64_answers_under_qemu_as_clockless_invoke_does(
    sam_local: SamLocal, reference: Stack, job: Job
) -> None:
    platform = docker(sam_local.engine, "image", "inspect", "--format", "{{.Os}}/{{.Architecture}}", sam_local.image)
    assert platform.stdout.strip() == f"linux/{ARCHITECTURE}"
    sample = sam_local.root / "events" / job.package / "malformed.json"
    before = sam_local.stack.contents()

    answered = response_of(sam_local.invoke(job.function_id, sample))

    expected = reference.cli(
        "invoke", job.function_id, "-e", str(sample), "--endpoint", reference.endpoint, check=False
    )
    reference_error = json.loads(expected.stdout.splitlines()[0])
    assert (answered["errorType"], answered["errorMessage"]) == (
        reference_error["errorType"],
        reference_error["errorMessage"],
    )
    assert sam_local.stack.contents() == before
