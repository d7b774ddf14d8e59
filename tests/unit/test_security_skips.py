"""The skip list's rules without running checkov: each entry has its reason, a finding no entry
covers fails the scan, an entry that covers nothing any more fails it too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clockless_tools.security.scan import ScanError, Skip, judge, load_skips, skips_markdown


def report(*failed: tuple[str, str]) -> dict[str, Any]:
    return {
        "summary": {"passed": 3, "failed": len(failed)},
        "results": {"failed_checks": [{"check_id": c, "resource": r, "check_name": "n"} for c, r in failed]},
    }


SKIPS = [
    Skip("CKV_AWS_117", "VPC", "no private resource to reach"),
    Skip("CKV_AWS_28", "PITR", "records live a day", ("IdempotencyTable",)),
]


def test_findings_the_list_explains_pass() -> None:
    verdict = judge(
        report(("CKV_AWS_117", "AWS::Serverless::Function.A"), ("CKV_AWS_28", "AWS::DynamoDB::Table.IdempotencyTable")),
        SKIPS,
    )

    assert verdict.ok
    assert (len(verdict.findings), verdict.passed) == (2, 3)


def test_a_new_finding_fails_and_a_skip_for_one_resource_covers_no_other() -> None:
    verdict = judge(
        report(
            ("CKV_AWS_117", "AWS::Serverless::Function.A"),
            ("CKV_AWS_28", "AWS::DynamoDB::Table.IdempotencyTable"),
            ("CKV_AWS_28", "AWS::DynamoDB::Table.LedgerTable"),
            ("CKV_AWS_26", "AWS::SNS::Topic.AlarmTopic"),
        ),
        SKIPS,
    )

    assert not verdict.ok
    assert [f.describe() for f in verdict.unexplained] == [
        "CKV_AWS_26 AWS::SNS::Topic AlarmTopic: n",
        "CKV_AWS_28 AWS::DynamoDB::Table LedgerTable: n",
    ]


def test_an_entry_that_matches_nothing_is_stale() -> None:
    verdict = judge(report(("CKV_AWS_117", "AWS::Serverless::Function.A")), SKIPS)

    assert not verdict.ok
    assert [(s.check, s.resources) for s in verdict.stale] == [("CKV_AWS_28", ("IdempotencyTable",))]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("- check: CKV_AWS_117\n  title: VPC\n", "reason"),
        ("- check: CKV_AWS_117\n  title: VPC\n  reason: '  '\n", "reason"),
        ("- check: vpc\n  title: VPC\n  reason: r\n", "checkov id"),
        ("- check: CKV_AWS_117\n  title: VPC\n  reason: r\n  because: x\n", "unknown key"),
        ("check: CKV_AWS_117\n", "a list"),
    ],
)
def test_an_entry_without_its_reason_or_malformed_is_refused(tmp_path: Path, entry: str, problem: str) -> None:
    path = tmp_path / "skips.yaml"
    path.write_text(entry, encoding="utf-8")

    with pytest.raises(ScanError, match=problem):
        load_skips(path)


def test_the_checked_in_list_loads_and_every_entry_is_explained() -> None:
    skips = load_skips()

    assert skips
    assert all(len(skip.reason.split()) >= 10 for skip in skips), [s.check for s in skips if len(s.reason) < 40]
    table = skips_markdown(skips).splitlines()
    assert len(table) == 2 + len(skips)
    assert all(f"`{skip.check}`" in row for skip, row in zip(skips, table[2:], strict=True))
