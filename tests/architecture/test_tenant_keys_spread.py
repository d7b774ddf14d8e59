"""Rule `tenant-keys-spread`: planted tables keyed by the tenant whose code puts each tenant under
one key value (or a bucket count the syntax cannot read), each caught on the table."""

from __future__ import annotations

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import HOUR, job_where

# The job the plants go into, picked from template.yaml by shape (tests/jobs.py): its first hourly
# fanned-out job, whose table is keyed by the tenant.
JOB = job_where(period=HOUR, fanned_out=True)
REPOSITORY = f"functions/{JOB.package}/{JOB.package}/repository.py"
RULE = "tenant-keys-spread"
BUCKETS = "TENANT_BUCKETS: Final = 16\n"


def _table(planted: PlantedCopy) -> str:
    """The tenant-keyed table the job's worker declares its own."""
    worker = planted.project.template.function(f"{JOB.stem}WorkerFunction")
    tables = planted.project.template.tables
    return next(t for t in worker.declared_tables if tables[t]["KeySchema"][0]["AttributeName"].startswith("tenant"))


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations(RULE) == []


def test_one_bucket_per_tenant_is_caught(planted: PlantedCopy) -> None:
    planted.replace(REPOSITORY, BUCKETS, "TENANT_BUCKETS: Final = 1\n")

    violation = found(planted.violations(RULE), file="template.yaml", resource=_table(planted), containing="over 1 key")
    assert "1,000 write units per second" in violation.message
    assert f"{REPOSITORY}:" in violation.message


def test_a_table_keyed_by_the_tenant_alone_is_caught(planted: PlantedCopy) -> None:
    # the partition key value is the tenant id itself: the repository no longer spreads it
    planted.replace(
        REPOSITORY, "    return bucketed_key(tenant_id, session_id, TENANT_BUCKETS)\n", "    return tenant_id\n"
    )

    found(
        planted.violations(RULE), file="template.yaml", resource=_table(planted), containing="never calls bucketed_key"
    )


def test_a_bucket_count_the_syntax_cannot_read_is_caught(planted: PlantedCopy) -> None:
    planted.replace(REPOSITORY, "session_id, TENANT_BUCKETS)", "session_id, int(TENANT_BUCKETS))")

    found(planted.violations(RULE), file="template.yaml", resource=_table(planted), containing="cannot read")
