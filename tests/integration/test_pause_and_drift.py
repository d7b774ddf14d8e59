"""`pause`/`resume` and `drift` against a stack on moto's CloudFormation and EventBridge Scheduler.

moto's CloudFormation cannot create an AWS::Scheduler::Schedule (nor run the SAM transform), so the
stack holds an SSM parameter under the schedule's logical id, whose physical id is the schedule's
name, and the schedule itself is created in moto's scheduler as SAM would deploy it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.local.services import create_schedules
from clockless_tools.operations.connection import open_stack, resolve_connection
from clockless_tools.operations.pause import set_paused, state_history
from clockless_tools.operations.status import job_status
from clockless_tools.operations.targets import LocalTarget, StackTarget
from clockless_tools.template.loader import DEFAULT_TEMPLATE
from clockless_tools.template.model import Template
from clockless_tools.template.scheduler import UPDATABLE_FIELDS, state_update
from tests.jobs import HOUR, job_where

# An hourly job of the template (its schedule and alarm stand in the stack below).
JOB = job_where(period=HOUR).name
STEM = job_where(period=HOUR).stem
SCHEDULE_NAME = f"clockless-test-{STEM}FunctionSchedule-1A2B3C"
# The stack's own schedule group (template.yaml's ScheduleGroup), as CloudFormation names it.
GROUP = "clockless-test-ScheduleGroup-4D5E6F"
ALARM_NAME = f"clockless-test-{STEM}DeadManAlarm-4D5E6F"
STACK = ["--stack", "clockless-test", "--region", "us-east-1"]


def _stack_template(template: Template) -> str:
    ledger = dict(template.resources["LedgerTable"])
    ledger.pop("Metadata", None)
    return json.dumps(
        {
            "Parameters": {f"{STEM}ScheduleState": {"Type": "String", "Default": "ENABLED"}},
            "Resources": {
                "LedgerTable": ledger,
                "SchedulerDeadLetterQueue": {"Type": "AWS::SQS::Queue"},
                # Stands in for the AWS::CloudWatch::Alarm (moto's cannot be listed as a stack resource).
                f"{STEM}DeadManAlarm": {
                    "Type": "AWS::SSM::Parameter",
                    "Properties": {"Name": ALARM_NAME, "Type": "String", "Value": "alarm"},
                },
                f"{STEM}Role": {
                    "Type": "AWS::IAM::Role",
                    "Properties": {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": []}},
                },
                f"{STEM}Function": {
                    "Type": "AWS::Lambda::Function",
                    "Properties": {
                        "Runtime": "python3.13",
                        "Handler": "index.handler",
                        "Role": {"Fn::GetAtt": [f"{STEM}Role", "Arn"]},
                        "Code": {"ZipFile": "def handler(event, context):\n    return {}\n"},
                    },
                },
                # Stands in for the AWS::Scheduler::ScheduleGroup: its physical id is the group's name.
                "ScheduleGroup": {
                    "Type": "AWS::SSM::Parameter",
                    "Properties": {"Name": GROUP, "Type": "String", "Value": "group"},
                },
                # Stands in for the AWS::Scheduler::Schedule: its physical id is the schedule's name.
                f"{STEM}FunctionSchedule": {
                    "Type": "AWS::SSM::Parameter",
                    "Properties": {"Name": SCHEDULE_NAME, "Type": "String", "Value": "schedule"},
                },
            },
        }
    )


@pytest.fixture
def stack(template: Template, monkeypatch: pytest.MonkeyPatch) -> Iterator[StackTarget]:
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL_SECRETS_MANAGER"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        session.client("cloudformation").create_stack(
            StackName="clockless-test", TemplateBody=_stack_template(template)
        )
        target = open_stack(
            template,
            resolve_connection(
                "clockless-test",
                region="us-east-1",
                profile=None,
                samconfig=DEFAULT_TEMPLATE.parent / "x.toml",
                config_env="default",
            ),
        )
        session.client("cloudwatch").put_metric_alarm(
            AlarmName=ALARM_NAME,
            Namespace="Clockless",
            MetricName="TickSucceeded",
            Dimensions=[{"Name": "job", "Value": JOB}],
            Statistic="Sum",
            Period=3600,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="LessThanThreshold",
            AlarmActions=["arn:aws:sns:us-east-1:123456789012:alarms"],
        )
        session.client("scheduler").create_schedule_group(Name=GROUP)
        ref = target.schedule(JOB)
        # As SAM deploys it, plus every optional field, so carrying them over is visible.
        session.client("scheduler").create_schedule(
            Name=SCHEDULE_NAME,
            GroupName=GROUP,
            Description="The job's schedule, as SAM deploys it.",
            EndDate=datetime.now(UTC) + timedelta(days=365),
            KmsKeyArn="arn:aws:kms:us-east-1:123456789012:key/clockless",
            **{**ref.expected, "Target": {**ref.expected["Target"], "RoleArn": "arn:aws:iam::123456789012:role/s"}},
        )
        yield target


def _deployed(target: StackTarget) -> dict[str, Any]:
    return target.schedule(JOB).get()


def test_the_update_request_carries_every_field_over_but_state() -> None:
    current = {name: f"value of {name}" for name in UPDATABLE_FIELDS} | {"Arn": "a", "CreationDate": "c"}

    request = state_update(current, "DISABLED")

    assert request == {**{name: f"value of {name}" for name in UPDATABLE_FIELDS}, "State": "DISABLED"}


def test_pause_changes_only_the_state_and_records_who_and_why(stack: StackTarget, template: Template) -> None:
    before = _deployed(stack)
    now = datetime(2026, 11, 29, 5, 30, tzinfo=UTC)

    result = set_paused(stack, template, JOB, paused=True, reason="vendor API down, INC-1234", now=now)

    after = _deployed(stack)
    assert (before["State"], after["State"]) == ("ENABLED", "DISABLED")
    unchanged = {"State", "LastModificationDate", "ResponseMetadata"}
    assert {k: v for k, v in after.items() if k not in unchanged} == {
        k: v for k, v in before.items() if k not in unchanged
    }
    assert result.changed
    (change,) = state_history(stack.ledger(), JOB)
    assert (change.action, change.reason, change.at) == ("paused", "vendor API down, INC-1234", now)
    assert change.by.startswith("arn:aws:sts::") or change.by.startswith("arn:aws:iam::")

    again = set_paused(stack, template, JOB, paused=True, reason="twice", now=now + timedelta(minutes=1))
    assert not again.changed
    assert len(state_history(stack.ledger(), JOB)) == 1


def _alarm_actions_enabled(target: StackTarget) -> bool:
    name = target.physical[f"{STEM}DeadManAlarm"]
    (alarm,) = boto3.client("cloudwatch", region_name="us-east-1").describe_alarms(AlarmNames=[name])["MetricAlarms"]
    return bool(alarm["ActionsEnabled"])


def test_pause_silences_the_dead_man_alarm_and_resume_restores_it(stack: StackTarget, template: Template) -> None:
    now = datetime(2026, 11, 29, 5, 30, tzinfo=UTC)
    assert _alarm_actions_enabled(stack)

    paused = set_paused(stack, template, JOB, paused=True, reason="INC-1", now=now)
    assert paused.alarms == [stack.physical[f"{STEM}DeadManAlarm"]]
    assert not _alarm_actions_enabled(stack)

    set_paused(stack, template, JOB, paused=False, reason="", now=now + timedelta(hours=1))
    assert _alarm_actions_enabled(stack)


def test_status_does_not_count_paused_ticks_as_missed(stack: StackTarget, template: Template) -> None:
    day = datetime(2026, 11, 29, tzinfo=UTC)
    set_paused(stack, template, JOB, paused=True, reason="maintenance", now=day + timedelta(hours=2, minutes=30))
    set_paused(stack, template, JOB, paused=False, reason="done", now=day + timedelta(hours=5, minutes=30))

    status = job_status(template, stack, JOB, now=day + timedelta(hours=8), window=timedelta(hours=8))

    hours = [day + timedelta(hours=h) for h in range(8)]
    assert status.paused == hours[3:6]
    assert status.missing == hours[:3] + hours[6:]
    assert status.paused_since is None
    assert _deployed(stack)["State"] == "ENABLED"


def test_cli_pause_status_resume_on_a_stack(stack: StackTarget) -> None:
    runner = CliRunner()

    alarm = ALARM_NAME
    paused = runner.invoke(app, ["pause", JOB, "--reason", "INC-1234", *STACK])
    status = runner.invoke(app, ["status", "--json", *STACK])
    resumed = runner.invoke(app, ["resume", JOB, *STACK])

    assert paused.exit_code == 0, paused.output
    assert paused.stdout == (
        f"{JOB}: paused (schedule {GROUP}/{SCHEDULE_NAME} on stack clockless-test (us-east-1); "
        f"dead-man alarm actions off: {alarm})\n"
    )
    job = next(j for j in json.loads(status.stdout)["jobs"] if j["job"] == JOB)
    assert job["paused_since"]["reason"] == "INC-1234"
    assert resumed.stdout == (
        f"{JOB}: resumed (schedule {GROUP}/{SCHEDULE_NAME} on stack clockless-test (us-east-1); "
        f"dead-man alarm actions on: {alarm})\n"
    )
    assert _deployed(stack)["State"] == "ENABLED"


def test_drift_finds_nothing_when_the_schedule_is_as_deployed(stack: StackTarget) -> None:
    result = CliRunner().invoke(app, ["drift", *STACK, "--json"])

    assert result.exit_code == 1, result.output  # the other jobs' schedules are not in this stack
    schedules = {s["job"]: s for s in json.loads(result.stdout)["schedules"]}
    assert schedules[JOB] == {"job": JOB, "schedule": f"{GROUP}/{SCHEDULE_NAME}", "found": True, "drifted": []}


def test_drift_names_each_field_that_differs(stack: StackTarget) -> None:
    client = boto3.client("scheduler", region_name="us-east-1")
    current = client.get_schedule(Name=SCHEDULE_NAME, GroupName=GROUP)
    target = current["Target"]
    changed = {
        **state_update(current, "DISABLED"),
        "ScheduleExpression": "cron(5 * * * ? *)",
        "ScheduleExpressionTimezone": "Europe/Paris",
        "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15},
        "Target": {
            **target,
            "Arn": target["Arn"] + "-old",
            "Input": target["Input"].replace('"trigger": "schedule"', '"trigger":"schedule"'),
            "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 86400},
            "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:elsewhere"},
        },
    }
    client.update_schedule(**changed)

    result = CliRunner().invoke(app, ["drift", *STACK])

    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith(JOB)]
    assert [line.split(": ")[1].removesuffix(" differs") for line in lines] == [
        "ScheduleExpression",
        "ScheduleExpressionTimezone",
        "State",
        "FlexibleTimeWindow",
        "Target.RetryPolicy",
        "Target.DeadLetterConfig.Arn",
        "Target.Arn",
        "Target.Input",
    ]
    assert lines[0] == (
        f"{JOB} ({GROUP}/{SCHEDULE_NAME}): ScheduleExpression differs: template 'cron(0 * * * ? *)', "
        "deployed 'cron(5 * * * ? *)'"
    )


def test_a_stack_deployed_with_the_job_disabled_expects_it_disabled(stack: StackTarget, template: Template) -> None:
    boto3.client("cloudformation", region_name="us-east-1").update_stack(
        StackName="clockless-test",
        TemplateBody=_stack_template(template),
        Parameters=[{"ParameterKey": f"{STEM}ScheduleState", "ParameterValue": "DISABLED"}],
    )
    target = StackTarget(template, "clockless-test", session=boto3.Session(region_name="us-east-1"))

    assert target.schedule(JOB).expected["State"] == "DISABLED"
    result = CliRunner().invoke(app, ["drift", *STACK])
    assert f"{JOB} ({GROUP}/{SCHEDULE_NAME}): State differs: template 'DISABLED', deployed 'ENABLED'" in result.stdout


def test_pause_resume_and_drift_on_the_local_runtime(tables: Any, template: Template, dynamodb_endpoint: str) -> None:
    create_schedules(template, dynamodb_endpoint)
    runner = CliRunner()
    local = ["--endpoint", dynamodb_endpoint]

    paused = runner.invoke(app, ["pause", JOB, "--reason", "INC-1234", *local])
    drifted = runner.invoke(app, ["drift", *local])
    resumed = runner.invoke(app, ["resume", JOB, "--reason", "fixed", *local])
    clean = runner.invoke(app, ["drift", *local])

    where = f"schedule default/{STEM}FunctionSchedule on local runtime ({dynamodb_endpoint})"
    assert paused.stdout == f"{JOB}: paused ({where})\n"
    assert drifted.exit_code == 1
    assert "State differs: template 'ENABLED', deployed 'DISABLED'" in drifted.stdout
    assert resumed.stdout == f"{JOB}: resumed ({where})\n"
    assert (clean.exit_code, clean.stdout.count("matches template.yaml")) == (0, len(template.jobs))
    history = state_history(LocalTarget(template, dynamodb_endpoint).ledger(), JOB)
    assert [(c.action, c.reason) for c in history] == [("paused", "INC-1234"), ("resumed", "fixed")]


def test_pause_needs_a_reason(tables: Any, dynamodb_endpoint: str) -> None:
    result = CliRunner().invoke(app, ["pause", JOB, "--reason", " ", "--endpoint", dynamodb_endpoint])

    assert result.exit_code == 2
    assert result.stderr == (
        "error: say why with --reason (e.g. --reason 'vendor API down, INC-1234'): it goes in the ledger\n"
    )


def test_a_pause_whose_record_was_lost_is_recorded_when_run_again(
    stack: StackTarget, template: Template, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = stack.ledger()
    real_put = ledger.client.put_item
    failures = iter([RuntimeError("throttled until retries were spent")])

    def put_once_failing(**request: Any) -> Any:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_put(**request)

    monkeypatch.setattr(ledger.client, "put_item", put_once_failing)
    with pytest.raises(RuntimeError):
        set_paused(stack, template, JOB, paused=True, reason="INC-1", now=datetime(2026, 11, 29, 5, tzinfo=UTC))
    assert _deployed(stack)["State"] == "DISABLED"
    assert state_history(ledger, JOB) == []

    again = set_paused(stack, template, JOB, paused=True, reason="INC-1", now=datetime(2026, 11, 29, 5, 1, tzinfo=UTC))

    assert not again.changed
    assert [(c.action, c.reason) for c in state_history(ledger, JOB)] == [("paused", "INC-1")]


def test_pause_on_a_local_runtime_without_schedules_says_what_to_do(tables: Any, dynamodb_endpoint: str) -> None:
    client = boto3.client(
        "scheduler",
        endpoint_url=dynamodb_endpoint,
        region_name="us-east-1",
        aws_access_key_id="clockless-local",
        aws_secret_access_key="clockless-local",
    )
    for schedule in client.list_schedules()["Schedules"]:
        client.delete_schedule(Name=schedule["Name"], GroupName=schedule["GroupName"])

    result = CliRunner().invoke(app, ["pause", JOB, "--reason", "x", "--endpoint", dynamodb_endpoint])

    assert result.exit_code == 2
    assert result.stderr == (
        f"error: local runtime ({dynamodb_endpoint}) has no schedule default/{STEM}FunctionSchedule for "
        f"'{JOB}': run `clockless local up` again for the local runtime (it creates the schedules), or deploy the "
        "current template.yaml\n"
    )


def test_a_schedule_disabled_outside_clockless_counts_as_paused(stack: StackTarget, template: Template) -> None:
    client = boto3.client("scheduler", region_name="us-east-1")
    client.update_schedule(**state_update(client.get_schedule(Name=SCHEDULE_NAME, GroupName=GROUP), "DISABLED"))
    now = datetime.now(UTC)

    status = job_status(template, stack, JOB, now=now, window=timedelta(hours=3))

    assert status.paused_since is not None
    assert (status.paused_since.by, status.paused_since.reason) == (
        "not through clockless",
        "the schedule's State is DISABLED",
    )
    # Paused since the schedule was last modified: the ticks before it still count as missing.
    assert abs((status.paused_since.at - now).total_seconds()) < 60
    assert all(t < status.paused_since.at for t in status.missing)
