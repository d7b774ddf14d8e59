"""Planted violations of ledger-outlives-dedupe, each caught: the ledger must keep a tick's record
as long as any function's idempotency record lives, whatever retention a deploy chooses."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"
RULE = "ledger-outlives-dedupe"
PARAMETER = "Parameters.LedgerRetentionDays"
RETENTION = "  LedgerRetentionDays:\n"


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        (
            "    Default: 90\n",
            "    Default: 1\n",
            f"Default is 1 day(s), shorter than {DAILY_JOB.stem}Function's IDEMPOTENCY_EXPIRY_SECONDS 172800 s",
        ),
        ("    MinValue: 2\n", "    MinValue: 1\n", "LedgerRetentionDays's MinValue is 1 day(s)"),
        ("    MinValue: 2\n", "", "LedgerRetentionDays's MinValue is not stated as a number of days"),
    ],
    ids=["shorter-default", "shorter-minimum", "no-minimum"],
)
def test_a_retention_a_deploy_can_choose_below_the_longest_expiry_is_caught(
    planted: PlantedCopy, old: str, new: str, complaint: str
) -> None:
    # Given the ledger's retention parameter with one bound lowered
    planted.replace(TEMPLATE, old, new, after=RETENTION)

    # When the rule checks the copy
    violations = planted.violations(RULE)

    # Then it names the parameter and the function whose records outlive the ledger
    violation = found(violations, file=TEMPLATE, resource=PARAMETER, containing=complaint)
    assert violation.fix == "make it at least 2"


def test_a_longer_expiry_on_one_function_is_caught(planted: PlantedCopy) -> None:
    # Given session cleanup's idempotency records made to live 100 days, past the ledger's 90
    planted.replace(
        TEMPLATE,
        'IDEMPOTENCY_EXPIRY_SECONDS: "86400"',
        'IDEMPOTENCY_EXPIRY_SECONDS: "8640000"',
        resource=f"{HOURLY_JOB.stem}Function",
    )

    violations = planted.violations(RULE)

    violation = found(violations, file=TEMPLATE, resource=PARAMETER, containing="Default is 90 day(s)")
    assert f"{HOURLY_JOB.stem}Function's IDEMPOTENCY_EXPIRY_SECONDS 8640000 s" in violation.message
    assert violation.fix == "make it at least 100"


def test_a_literal_retention_on_one_function_is_checked_too(planted: PlantedCopy) -> None:
    # Given one function that overrides the ledger's retention with a literal of one day
    planted.replace(
        TEMPLATE,
        'IDEMPOTENCY_EXPIRY_SECONDS: "86400"\n',
        'IDEMPOTENCY_EXPIRY_SECONDS: "86400"\n          LEDGER_RETENTION_DAYS: "1"\n',
        resource=f"{HOURLY_JOB.stem}Function",
    )

    violations = planted.violations(RULE)

    found(
        violations,
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}Function",
        containing=f"{HOURLY_JOB.stem}Function's LEDGER_RETENTION_DAYS is 1 day(s)",
    )
