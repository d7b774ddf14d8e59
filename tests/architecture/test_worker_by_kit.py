"""Rule `worker-by-kit`: planted workers that are not the kit's, or are wired to the wrong job or
queue, each caught; text that only mentions the kit is not a worker."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
WINDOW_WORKER = f"functions/{DAILY_JOB.package}/{DAILY_JOB.package}/worker.py"
CLEANUP_WORKER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/worker.py"
CLEANUP_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


def test_the_workers_hold_it(planted: PlantedCopy) -> None:
    # The jobs' own workers: `work.worker(...)` with `work` imported from the coordinator's handler,
    # where `work = FanOut(job, ...)` over `job = ScheduledJob(JOB_NAME)`.
    assert planted.violations("worker-by-kit") == []


def test_a_worker_made_by_something_else_than_the_fan_out_is_caught(planted: PlantedCopy) -> None:
    planted.replace(CLEANUP_WORKER, "lambda_handler = work.worker(", "lambda_handler = wrap(")

    violation = found(
        planted.violations("worker-by-kit"),
        file=CLEANUP_WORKER,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="is not made by a clockless.FanOut's .worker(...)",
    )
    assert violation.line is not None
    assert "lambda_handler = wrap(" in (planted.root / CLEANUP_WORKER).read_text().splitlines()[violation.line - 1]


def test_a_coordinators_fan_out_over_another_job_is_caught_through_the_import(planted: PlantedCopy) -> None:
    # Given cleanup's FanOut, which its worker imports, built over window generation's job
    planted.replace(
        CLEANUP_HANDLER,
        "work = FanOut(job, partitions=EMPTY_INDEX_PARTITIONS)",
        f'nightly = ScheduledJob("{DAILY_JOB.name}")\nwork = FanOut(nightly, partitions=EMPTY_INDEX_PARTITIONS)',
    )

    found(
        planted.violations("worker-by-kit"),
        file=CLEANUP_HANDLER,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=f"works for job '{DAILY_JOB.name}'",
    )


def test_a_relative_import_and_a_decorator_are_followed(planted: PlantedCopy) -> None:
    planted.write(
        f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/fanout.py",
        "from clockless.fanout import FanOut\nfrom .handler import job as cleanup\n\n"
        "work = FanOut(job=cleanup, partitions=['0'])\n",
    )
    planted.write(
        CLEANUP_WORKER,
        "from .fanout import work\n\n\n@work.worker\ndef lambda_handler() -> None:\n    return None\n",
    )

    assert planted.violations("worker-by-kit") == []


@pytest.mark.parametrize(
    ("module", "containing"),
    [
        ("def lambda_handler(event: object, context: object) -> None:\n    return None\n", "is not made by"),
        # Only a comment and a string talk about the kit.
        ('# lambda_handler = work.worker(...)\nNOTE = "work.worker"\nlambda_handler = print\n', "is not made by"),
        # .worker of something that is not a FanOut.
        (
            "class Pool:\n    def worker(self, f: object) -> object:\n        return f\n\n\n"
            "work = Pool()\nlambda_handler = work.worker(None)\n",
            "is not made by",
        ),
        (
            f"from clockless import FanOut\nfrom {HOURLY_JOB.package}.handler import job\n",
            "defines no 'lambda_handler'",
        ),
    ],
    ids=["plain-handler", "comment-only", "not-a-fan-out", "no-handler"],
)
def test_a_worker_that_is_not_the_kits_is_caught(planted: PlantedCopy, module: str, containing: str) -> None:
    planted.write(CLEANUP_WORKER, module)

    found(
        planted.violations("worker-by-kit"),
        file=CLEANUP_WORKER,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=containing,
    )


def test_a_handler_naming_no_module_is_caught(planted: PlantedCopy) -> None:
    planted.delete(CLEANUP_WORKER)

    found(
        planted.violations("worker-by-kit"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="names no module",
    )


def test_a_worker_built_from_another_jobs_fan_out_is_caught(planted: PlantedCopy) -> None:
    planted.write(
        CLEANUP_WORKER,
        f'from clockless import FanOut, ScheduledJob\n\nnightly = ScheduledJob("{DAILY_JOB.name}")\n'
        "work = FanOut(nightly, partitions=['0'])\nlambda_handler = work.worker(lambda: None)\n",
    )

    violation = found(
        planted.violations("worker-by-kit"),
        file=CLEANUP_WORKER,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=f"works for job '{DAILY_JOB.name}'",
    )
    assert violation.line == 4


def test_a_fan_out_over_a_job_without_a_literal_name_is_caught(planted: PlantedCopy) -> None:
    planted.write(
        CLEANUP_WORKER,
        "import os\nfrom clockless import FanOut, ScheduledJob\n\n"
        'job = ScheduledJob(os.environ["JOB"])\nwork = FanOut(job, partitions=["0"])\n'
        "lambda_handler = work.worker(lambda: None)\n",
    )

    found(
        planted.violations("worker-by-kit"),
        file=CLEANUP_WORKER,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="not over a ScheduledJob named by a literal",
    )


@pytest.mark.parametrize(
    "worker_of",
    [f"        worker_of: {HOURLY_JOB.stem}Function\n", "        worker_of: JobTriggerFunction\n"],
    ids=["missing", "not-scheduled"],
)
def test_a_worker_that_does_not_name_its_scheduled_function_is_caught(planted: PlantedCopy, worker_of: str) -> None:
    replacement = "" if worker_of.endswith(f"{HOURLY_JOB.stem}Function\n") else worker_of
    planted.replace(
        TEMPLATE,
        f"        worker_of: {HOURLY_JOB.stem}Function\n",
        replacement,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
    )

    found(
        planted.violations("worker-by-kit"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing="worker_of is",
    )


def test_a_coordinator_sending_to_another_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"WORK_QUEUE_URL: !Ref {HOURLY_JOB.stem}WorkQueue",
        f"WORK_QUEUE_URL: !Ref {DAILY_JOB.stem}WorkQueue",
        after=f"  {HOURLY_JOB.stem}Function:\n",
    )

    found(
        planted.violations("worker-by-kit"),
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}Function",
        containing="the tick's partitions are never applied",
    )


def test_a_worker_continuing_on_another_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"WORK_QUEUE_URL: !Ref {DAILY_JOB.stem}WorkQueue",
        f"WORK_QUEUE_URL: !Ref {DAILY_JOB.stem}WorkDeadLetterQueue",
        after=f"  {DAILY_JOB.stem}WorkerFunction:\n",
    )

    found(
        planted.violations("worker-by-kit"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerFunction",
        containing="continuations would go where no worker reads",
    )


def test_a_worker_no_mapping_feeds_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"FunctionName: !Ref {HOURLY_JOB.stem}WorkerFunction",
        f"FunctionName: !Ref {DAILY_JOB.stem}WorkerFunction",
        resource=f"{HOURLY_JOB.stem}WorkerEventSourceMapping",
    )

    violations = planted.violations("worker-by-kit")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}WorkerFunction", containing="0 event source mappings")
    found(violations, file=TEMPLATE, resource=f"{DAILY_JOB.stem}WorkerFunction", containing="2 event source mappings")


def test_a_function_fed_from_a_queue_without_being_a_worker_is_caught(planted: PlantedCopy) -> None:
    # Given the trigger fed from the cleanup work queue: a mapping makes it a worker, which it is not
    planted.replace(
        TEMPLATE,
        f"FunctionName: !Ref {HOURLY_JOB.stem}WorkerFunction",
        "FunctionName: !Ref JobTriggerFunction",
        resource=f"{HOURLY_JOB.stem}WorkerEventSourceMapping",
    )

    violations = planted.violations("worker-by-kit")

    found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing="worker_of is None")
    found(
        violations,
        file="functions/job_trigger/job_trigger/handler.py",
        resource="JobTriggerFunction",
        containing="is not made by",
    )


@pytest.mark.parametrize(
    ("old", "new", "resource", "complaint"),
    [
        (
            'WORK_PAGE_SIZE: "490"',
            'WORK_PAGE_SIZE: "20000"',
            f"{HOURLY_JOB.stem}WorkerFunction",
            "WORK_PAGE_SIZE must be <=",
        ),
        ('WORK_CONCURRENCY: "4"', 'WORK_CONCURRENCY: "four"', f"{HOURLY_JOB.stem}WorkerFunction", "must be an integer"),
        (
            f"          WORK_DEAD_LETTER_QUEUE_URL: !Ref {HOURLY_JOB.stem}WorkDeadLetterQueue\n",
            "",
            f"{HOURLY_JOB.stem}WorkerFunction",
            "WORK_DEAD_LETTER_QUEUE_URL is not set",
        ),
    ],
    ids=["page-past-the-kits-bound", "concurrency-not-a-number", "no-dead-letter-queue"],
)
def test_an_environment_the_kit_would_refuse_is_caught_at_build_time(
    planted: PlantedCopy, old: str, new: str, resource: str, complaint: str
) -> None:
    planted.replace(TEMPLATE, old, new, after=f"  {HOURLY_JOB.stem}WorkerFunction:\n")

    violation = found(planted.violations("worker-by-kit"), file=TEMPLATE, resource=resource, containing=complaint)
    assert violation.message.startswith("the kit would refuse its environment at the first invocation")
