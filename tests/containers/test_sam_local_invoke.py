"""`sam local invoke` of every scheduled function with every sample of events/ (its tick, the tick's
retry, a malformed tick), and of its worker with an SQS event built from the messages the tick
queued, in real containers on the embedded stack; the rest of the tick's partitions through
`sam local start-lambda` and a boto3 Lambda client, as Lambda's SQS poller would hand them over.
Judged against `clockless invoke` of the same events on a stack holding the same data: the same
responses, the same errors, and the same tables and ledger item by item (clocks and claims aside).

Slow and in containers: `make test-containers` (CI runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.containers.harness import SamLocal, Stack, every_sample_does_what_clockless_invoke_does
from tests.jobs import Job, jobs, project_template

pytestmark = [pytest.mark.slow, pytest.mark.containers]


@pytest.mark.parametrize("job", jobs(), ids=lambda job: job.name)
def test_every_sample_through_sam_local_invoke_does_what_clockless_invoke_does(
    sam_local: SamLocal, reference: Stack, job: Job, workdir: Path
) -> None:
    every_sample_does_what_clockless_invoke_does(sam_local, reference, job, workdir, project_template())
