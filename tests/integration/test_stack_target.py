"""`--stack`: the same operations against a deployed stack, resolved through CloudFormation.

moto deploys the ledger table and a function from plain CloudFormation (it cannot run the SAM
transform, nor execute a Lambda without Docker), so the function's response is stubbed at the
Lambda client; everything else is moto."""

from __future__ import annotations

import copy
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clockless import Tick, Trigger
from clockless.schedule.expressions import ScheduleExpressionError
from clockless_tools.operations.backfill import BackfillPolicy, backfill
from clockless_tools.operations.run_now import run_now
from clockless_tools.operations.status import job_status
from clockless_tools.operations.targets import OperationError, StackTarget
from clockless_tools.template.model import Template
from tests.jobs import HOUR, job_where

# An hourly job of the template: the stack below holds its function, run-now and backfill press it.
JOB = job_where(period=HOUR).name
STEM = job_where(period=HOUR).stem

DAY = datetime(2026, 11, 29, tzinfo=UTC)


def _stack_template(template: Template) -> str:
    ledger = dict(template.resources["LedgerTable"])
    ledger.pop("Metadata", None)
    return json.dumps(
        {
            "Resources": {
                "LedgerTable": ledger,
                f"{STEM}Role": {
                    "Type": "AWS::IAM::Role",
                    "Properties": {
                        "AssumeRolePolicyDocument": {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Effect": "Allow",
                                    "Principal": {"Service": "lambda.amazonaws.com"},
                                    "Action": "sts:AssumeRole",
                                }
                            ],
                        }
                    },
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
            }
        }
    )


class FakeLambda:
    """Stands in for Lambda's Invoke: answers as the deployed function would, records the call."""

    def __init__(self, *, function_error: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.function_error = function_error

    def invoke(self, **request: Any) -> dict[str, Any]:
        self.calls.append(request)
        event = json.loads(request["Payload"])
        if self.function_error:
            body = {"errorType": "ConfigurationError", "errorMessage": "LEDGER_TABLE_NAME is not set"}
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(body).encode())}
        tick = Tick.from_event(event, expected_job=JOB)
        result = {**tick.identity, "outcome": "executed", "summary": {}}
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(result).encode())}


@pytest.fixture
def stack(template: Template, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        session.client("cloudformation").create_stack(
            StackName="clockless-test", TemplateBody=_stack_template(template)
        )
        yield session


def test_stack_target_resolves_the_ledger_and_invokes_the_physical_function(stack: Any, template: Template) -> None:
    target = StackTarget(template, "clockless-test", session=stack)
    fake = FakeLambda()
    target._lambda = fake

    result = run_now(target, template, JOB, at=DAY + timedelta(hours=5))

    (call,) = fake.calls
    assert call["FunctionName"] == target.physical[f"{STEM}Function"]
    assert call["InvocationType"] == "RequestResponse"
    sent = Tick.from_event(json.loads(call["Payload"]), expected_job=JOB)
    assert sent.trigger is Trigger.MANUAL
    assert result["scheduled_time"] == "2026-11-29T05:00:00Z"


def test_status_and_backfill_read_the_stack_ledger(stack: Any, template: Template) -> None:
    target = StackTarget(template, "clockless-test", session=stack)
    target._lambda = FakeLambda()
    ledger_table = target.physical["LedgerTable"]
    for hour in (0, 1, 3):
        stack.client("dynamodb").put_item(
            TableName=ledger_table,
            Item={
                "job": {"S": JOB},
                "scheduled_time": {"S": f"2026-11-29T{hour:02d}:00:00Z"},
                "status": {"S": "succeeded"},
                "succeeded_job": {"S": JOB},
                "attempts": {"N": "1"},
            },
        )

    status = job_status(template, target, JOB, now=DAY + timedelta(hours=4), window=timedelta(hours=4))
    result = backfill(template, target, JOB, start=DAY, end=DAY + timedelta(hours=4), policy=BackfillPolicy.ALL)

    assert status.missing == [DAY + timedelta(hours=2)]
    assert status.last_success is not None
    assert status.last_success.scheduled_time == DAY + timedelta(hours=3)
    assert result.outcomes == {"2026-11-29T02:00:00Z": "executed"}


def test_a_function_error_is_reported_not_swallowed(stack: Any, template: Template) -> None:
    target = StackTarget(template, "clockless-test", session=stack)
    target._lambda = FakeLambda(function_error=True)

    with pytest.raises(OperationError, match=f"{STEM}Function failed: ConfigurationError"):
        run_now(target, template, JOB, at=DAY)


def test_an_unknown_stack_is_a_clear_error(stack: Any, template: Template) -> None:
    with pytest.raises(OperationError, match="cannot read stack 'nope'"):
        StackTarget(template, "nope", session=stack)


def _deploy_schedule(session: Any, target: StackTarget, expression: str) -> dict[str, Any]:
    """What CloudFormation would have made of the template's group and the cleanup schedule."""
    scheduler = session.client("scheduler")
    group = "clockless-test-ScheduleGroup-1Q2W3E4R"
    name = f"clockless-test-{STEM}FunctionSchedule-5T6Y7U8I"
    scheduler.create_schedule_group(Name=group)
    scheduler.create_schedule(
        Name=name,
        GroupName=group,
        ScheduleExpression=expression,
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": "arn:aws:lambda:us-east-1:123456789012:function:x", "RoleArn": "arn:aws:iam::1:role/x"},
    )
    target.physical["ScheduleGroup"] = group
    target.physical[f"{STEM}FunctionSchedule"] = name
    return dict(scheduler.get_schedule(Name=name, GroupName=group))


def test_the_schedule_arn_names_the_stacks_own_group(stack: Any, template: Template) -> None:
    target = StackTarget(template, "clockless-test", session=stack)
    _deploy_schedule(stack, target, "cron(0 * * * ? *)")

    arn = target.schedule_arn(JOB)

    assert arn is not None
    assert arn.endswith(
        f":schedule/clockless-test-ScheduleGroup-1Q2W3E4R/clockless-test-{STEM}FunctionSchedule-5T6Y7U8I"
    )


def test_a_rate_without_start_date_is_anchored_on_the_deployed_schedules_creation(
    stack: Any, template: Template
) -> None:
    document = copy.deepcopy(dict(template.document))
    hourly = document["Resources"][f"{STEM}Function"]["Properties"]["Events"]["Schedule"]["Properties"]
    hourly["ScheduleExpression"] = "rate(1 hour)"
    rated = Template(path=template.path, document=document)
    target = StackTarget(rated, "clockless-test", session=stack)
    deployed = _deploy_schedule(stack, target, "rate(1 hour)")
    # Seconds and all: the guide's scheduled-time for such a schedule is 2022-03-22T18:59:43Z.
    created = deployed["CreationDate"].astimezone(UTC).replace(microsecond=0)

    spec = target.schedule_spec(JOB)

    assert spec.next_ticks(created - timedelta(days=1), 3) == [created + timedelta(hours=h) for h in range(3)]
    # Locally the same schedule has no anchor, and the operations say so instead of inventing one.
    with pytest.raises(ScheduleExpressionError, match="declare StartDate"):
        rated.jobs[JOB].spec(rated).next_ticks(created, 1)
