"""A job that does its work in the scheduled function itself is declared with the loops of
tools/clockless_tools/template/fragments/jobs-without-fan-out.yaml: added to the template with one
such job, they write out its function, log group and alarms, and the template's rules hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clockless_tools.architecture import RULES, check
from clockless_tools.template.model import Template
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy

TEMPLATE = "template.yaml"
FRAGMENT = PROJECT_ROOT / "tools" / "clockless_tools" / "template" / "fragments" / "jobs-without-fan-out.yaml"
# Rules that read only the template (the others read the job's code and sample events, which a
# declaration alone does not write).
TEMPLATE_RULES = (
    "least-privilege",
    "failure-paths",
    "dead-man-alarm",
    "duration-bound",
    "log-groups",
    "schedule-delivery",
    "tick-identity",
    "dedupe-outlives-retries",
    "ledger-outlives-dedupe",
)
DECLARATION = """    Digest:
      Name: digest
      CodeUri: functions/session_cleanup/
      Package: session_cleanup
      Description: Daily digest.
      Schedule: cron(0 15 * * ? *)
      ScheduleDescription: Digest, once a day at 15:00 UTC.
      SchedulerRetries: 5
      SchedulerMaxEventAgeSeconds: 900
      LambdaMaxEventAgeSeconds: 1800
      IdempotencyExpirySeconds: "86400"
      LocalTimeRule: none
      GraceMinutes: 55
      ExpectedDurationSeconds: 30
      DeadManPeriodSeconds: 3600
      DeadManPeriods: 25
      DeadManDescription: No scheduled digest tick succeeded for 25 h.
      Tables: [SessionsTable]
"""
PARAMETER = """  DigestScheduleState:
    Type: String
    Default: ENABLED
    AllowedValues: [ENABLED, DISABLED]
"""
POLICY = """  DigestTablesPolicy:
    Type: AWS::IAM::ManagedPolicy
    Properties:
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Sid: ReadSessions
            Effect: Allow
            Action: [dynamodb:Query]
            Resource: !GetAtt SessionsTable.Arn
"""


def _with_a_job_without_fan_out(root: Path) -> Path:
    """template.yaml with the fragment's loops (over [Digest]) and Digest's declaration."""
    path = root / TEMPLATE
    text = path.read_text(encoding="utf-8")
    fragment = FRAGMENT.read_text(encoding="utf-8").replace("[NewJob]", "[Digest]")
    resources_loop, outputs_loop = fragment.split("\nResources:\n", 1)[1].split("\nOutputs:\n", 1)
    text = text.replace("  Jobs:\n", "  Jobs:\n" + DECLARATION, 1)
    text = text.replace("Parameters:\n", "Parameters:\n" + PARAMETER, 1)
    text = text.replace("\nResources:\n", "\nResources:\n" + resources_loop + "\n" + POLICY + "\n", 1)
    text = text.replace("\nOutputs:\n", "\nOutputs:\n" + outputs_loop + "\n", 1)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def declared(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / TEMPLATE).write_text((PROJECT_ROOT / TEMPLATE).read_text(encoding="utf-8"), encoding="utf-8")
    return _with_a_job_without_fan_out(root)


def test_the_loop_writes_out_the_function_its_log_group_and_alarms_and_no_queue(declared: Path) -> None:
    template = Template.load(declared)

    digest = {logical_id for logical_id in template.resources if logical_id.startswith("Digest")}
    assert digest == {
        "DigestFunction",
        "DigestLogGroup",
        "DigestDeadManAlarm",
        "DigestDurationAlarm",
        "DigestErrorsAlarm",
        "DigestTablesPolicy",
    }
    function = template.function("DigestFunction")
    assert "WORK_QUEUE_URL" not in function.environment
    statements = [s["Sid"] for policy in function.properties["Policies"] for s in policy["Statement"]]
    assert statements == ["IdempotencyRecords", "RunLedger", "LastSuccessfulTick", "ReadSessions"]
    assert template.jobs["digest"].expression == "cron(0 15 * * ? *)"
    assert "DigestFunctionArn" in template.document["Outputs"]


def test_the_template_rules_hold_for_it(tmp_path: Path) -> None:
    planted = PlantedCopy.of_project(tmp_path)
    # The copy holds the written-out template; put the declaring one back, with the job.
    (planted.root / TEMPLATE).write_text((PROJECT_ROOT / TEMPLATE).read_text(encoding="utf-8"), encoding="utf-8")
    _with_a_job_without_fan_out(planted.root)

    violations = check(planted.project, [rule for rule in RULES if rule.name in TEMPLATE_RULES])

    assert [f"{v.rule} {v.resource}: {v.message}" for v in violations] == []


@pytest.mark.slow
def test_cfn_lint_accepts_it(declared: Path) -> None:
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    result = subprocess.run(
        [str(cfn_lint), "--append-rules", "cfn_lint_serverless.rules", "--", str(declared)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert (result.returncode, result.stdout) == (0, "")
