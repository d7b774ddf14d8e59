"""Where operations act: the local runtime or a deployed stack, through the same `JobTarget`; and a
tick's event as the scheduler delivers it."""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from datetime import datetime
from typing import Any, Protocol

import boto3

from clockless import Tick, Trigger
from clockless.ledger import RunLedger
from clockless_tools.local.dynamodb import dynamodb_client
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template


class OperationError(Exception):
    """The operation was refused; the message says why and what to do."""


class JobTarget(Protocol):
    """Where jobs run: the local runtime or a deployed stack."""

    description: str

    def ledger(self) -> RunLedger: ...

    def invoke(self, job: str, event: dict[str, Any]) -> dict[str, Any]:
        """Invoke the job's function synchronously with a scheduler-shaped payload."""
        ...

    def schedule_arn(self, job: str) -> str | None: ...


def _retention_seconds(template: Template) -> int:
    return int(template.parameter_default("LedgerRetentionDays")) * 86400


class LocalTarget:
    """The running embedded DynamoDB (`clockless local up`) and the Docker-free runtime."""

    def __init__(self, template: Template, endpoint: str, names: LocalNames = LocalNames()) -> None:
        self.template = template
        self.names = names
        self.runtime = LocalLambdaRuntime(template, endpoint, names)
        self.description = f"local runtime ({endpoint})"
        self._ledger = RunLedger(
            names.table_name(_ledger_logical_id(template)),
            dynamodb_client(endpoint),
            retention_seconds=_retention_seconds(template),
        )

    def ledger(self) -> RunLedger:
        return self._ledger

    def invoke(self, job: str, event: dict[str, Any]) -> dict[str, Any]:
        function = self.template.function_for_job(job)
        # The function's logs go to stderr, as `clockless invoke` does: stdout is the report's.
        with contextlib.redirect_stdout(sys.stderr):
            try:
                result = self.runtime.invoke(function.logical_id, event)
            except Exception as error:  # the function's own failure, reported as Lambda reports it
                raise OperationError(f"{function.logical_id} failed: {type(error).__name__}: {error}") from error
        return dict(result)

    def schedule_arn(self, job: str) -> str | None:
        schedule = self.template.jobs[job]
        return (
            f"arn:aws:scheduler:{self.names.region}:{self.names.account_id}:schedule/default/"
            f"{schedule.function_id}{schedule.event_id}"
        )


class StackTarget:
    """A deployed stack: physical ids from CloudFormation, the ledger in DynamoDB, Lambda invoke."""

    def __init__(self, template: Template, stack_name: str, *, session: Any) -> None:
        self.template = template
        self.description = f"stack {stack_name} ({session.region_name})"
        cloudformation = session.client("cloudformation")
        try:
            resources = cloudformation.describe_stack_resources(StackName=stack_name)["StackResources"]
        except cloudformation.exceptions.ClientError as error:
            raise OperationError(f"cannot read stack {stack_name!r}: {error}") from None
        self.physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources}
        ledger_id = _ledger_logical_id(template)
        if ledger_id not in self.physical:
            raise OperationError(f"stack {stack_name!r} has no {ledger_id}: deploy the current template.yaml first")
        self._ledger = RunLedger(
            self.physical[ledger_id], session.client("dynamodb"), retention_seconds=_retention_seconds(template)
        )
        self._lambda = session.client("lambda")
        self._session = session
        self._account: str | None = None

    def ledger(self) -> RunLedger:
        return self._ledger

    def invoke(self, job: str, event: dict[str, Any]) -> dict[str, Any]:
        function_id = self.template.function_for_job(job).logical_id
        response = self._lambda.invoke(
            FunctionName=self.physical[function_id],
            InvocationType="RequestResponse",
            Payload=json.dumps(event).encode(),
        )
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            raise OperationError(f"{function_id} failed: {payload.get('errorType')}: {payload.get('errorMessage')}")
        return dict(payload)

    def schedule_arn(self, job: str) -> str | None:
        schedule = self.template.jobs[job]
        # SAM names the generated AWS::Scheduler::Schedule <Function><Event>; with OmitName the
        # physical id is the generated name, in the default group.
        name = self.physical.get(f"{schedule.function_id}{schedule.event_id}")
        if name is None:
            return None
        if self._account is None:
            # GetCallerIdentity needs no IAM permission.
            self._account = str(self._session.client("sts").get_caller_identity()["Account"])
        return f"arn:aws:scheduler:{self._session.region_name}:{self._account}:schedule/default/{name}"


def _ledger_logical_id(template: Template) -> str:
    ledgers = template.tables_of_kind("ledger")
    if ledgers:
        return ledgers[0]
    raise TemplateError("template.yaml declares no table with Metadata clockless.kind: ledger")


def stack_target(template: Template, stack_name: str, *, region: str | None, profile: str | None) -> StackTarget:
    return StackTarget(template, stack_name, session=boto3.Session(region_name=region, profile_name=profile))


def require_job(template: Template, job: str) -> None:
    if job not in template.jobs:
        raise OperationError(f"unknown job {job!r}; template.yaml schedules: {', '.join(sorted(template.jobs))}")


def tick_event(target: JobTarget, job: str, scheduled_time: datetime, trigger: Trigger) -> dict[str, Any]:
    """A payload shaped exactly like the scheduler's `Input` for this job."""
    return Tick(
        job=job,
        scheduled_time=scheduled_time,
        schedule_arn=target.schedule_arn(job),
        attempt=1,
        execution_id=str(uuid.uuid4()),
        trigger=trigger,
    ).to_event()
