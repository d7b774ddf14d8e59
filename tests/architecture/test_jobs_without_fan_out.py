"""A job that does its work in the scheduled function itself is declared with the loops of
tools/clockless_tools/template/fragments/jobs-without-fan-out.yaml, which `clockless new job`
(without --fan-out) brings into the template with the first such job: they write out its function,
log group and alarms, and the template's rules, cfn-lint, `sam validate --lint` and `sam build` hold."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clockless_tools.architecture import RULES, check
from clockless_tools.scaffold.declaration import declare, plain_loop_drift
from clockless_tools.scaffold.names import JobNames
from clockless_tools.scaffold.wiring import add_table
from clockless_tools.template.model import Template
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy
from tests.jobs import job_where

TEMPLATE = "template.yaml"
SAM = PROJECT_ROOT / ".venv-sam" / "bin" / "sam"
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
DIGEST = JobNames.of("digest")


def _with_a_job_without_fan_out(root: Path) -> Path:
    """template.yaml with a job `digest` declared as `clockless new job digest` declares it."""
    path = root / TEMPLATE
    text = add_table(path.read_text(encoding="utf-8"), DIGEST)
    path.write_text(declare(text, DIGEST, fan_out=False), encoding="utf-8")
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
        "DigestItemsFailedAlarm",
        "DigestLocalTickMissedAlarm",
        "DigestTablesPolicy",
        "DigestTable",
        "DigestDashboard",
    }
    function = template.function("DigestFunction")
    assert "WORK_QUEUE_URL" not in function.environment
    statements = [s["Sid"] for policy in function.properties["Policies"] for s in policy["Statement"]]
    assert statements == ["IdempotencyRecords", "RunLedger", "LastSuccessfulTick", "ReadDueItems", "ApplyDueItems"]
    # The loop's defaults: a daily job's numbers
    assert template.jobs["digest"].expression == "cron(0 3 * * ? *)"
    assert template.resources["DigestDeadManAlarm"]["Properties"]["EvaluationPeriods"] == 27
    assert "DigestFunctionArn" in template.document["Outputs"]


def test_the_template_rules_hold_for_it(tmp_path: Path) -> None:
    planted = PlantedCopy.of_project(tmp_path)
    # The copy holds the written-out template; put the declaring one back, with the job.
    (planted.root / TEMPLATE).write_text((PROJECT_ROOT / TEMPLATE).read_text(encoding="utf-8"), encoding="utf-8")
    _with_a_job_without_fan_out(planted.root)

    violations = check(planted.project, [rule for rule in RULES if rule.name in TEMPLATE_RULES])

    assert [f"{v.rule} {v.resource}: {v.message}" for v in violations] == []


@pytest.mark.slow
def test_cfn_lint_sam_validate_and_sam_build_accept_it(tmp_path: Path) -> None:
    # Given a copy of what `sam build` reads, with the job declared and its package in place
    root = tmp_path / "project"
    root.mkdir()
    for name in ("template.yaml", "samconfig.toml"):
        shutil.copy2(PROJECT_ROOT / name, root / name)
    for name in ("functions", "layers"):
        shutil.copytree(PROJECT_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    # Its package: a copy of the first job's, renamed (sam build packages it; no rule reads it here)
    source = job_where().package
    shutil.copytree(root / "functions" / source, root / DIGEST.code_dir)
    (root / DIGEST.code_dir / source).rename(root / DIGEST.package_dir)
    _with_a_job_without_fan_out(root)
    bin_dir = Path(sys.executable).parent
    assert SAM.is_file(), "the SAM CLI is not installed: `make sam`"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SAM_CLI_TELEMETRY": "0"}

    for command in (
        [str(bin_dir / "cfn-lint"), "--append-rules", "cfn_lint_serverless.rules", "--", TEMPLATE],
        [str(SAM), "validate", "--lint", "--region", "us-east-1"],
        [str(SAM), "build", "--parallel"],
    ):
        result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}\n{result.stderr}"
    built = (root / ".aws-sam" / "build" / "template.yaml").read_text(encoding="utf-8")
    assert "DigestFunction" in built


def test_the_templates_loops_for_jobs_without_fan_out_are_the_fragments() -> None:
    # The loops `clockless new job` writes and the ones the template holds stay one text: a change
    # to one alone (a key the kit reads, added to the fragment only) breaks the next job added.
    assert plain_loop_drift((PROJECT_ROOT / TEMPLATE).read_text(encoding="utf-8")) == []


def test_a_line_the_templates_loop_lacks_is_named_at_its_line(declared: Path) -> None:
    text = declared.read_text(encoding="utf-8")
    dropped = "              LOCAL_TIME: !FindInMap [Jobs, !Ref Job, LocalTime, {DefaultValue: none}]\n"
    start = text.index("  Fn::ForEach::JobsWithoutFanOut:\n")
    at = text.index(dropped, start)
    planted = text[:at] + text[at + len(dropped) :]

    problems = plain_loop_drift(planted)

    assert len(problems) == 1, problems
    assert problems[0].startswith(f"template.yaml:{planted[:at].count(chr(10)) + 1}: Fn::ForEach::JobsWithoutFanOut")
    assert "LOCAL_TIME" in problems[0]
