"""Where operations act: the local runtime or a deployed stack, through the same `JobTarget`; and a
tick's event as the scheduler delivers it."""

from __future__ import annotations

import contextlib
import getpass
import json
import socket
import sys
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from clockless import Tick, Trigger
from clockless.ledger import RunLedger
from clockless.schedule.expressions import ScheduleExpressionError, ScheduleSpec
from clockless_tools.errors import ToolError
from clockless_tools.local.dynamodb import dynamodb_client, local_client
from clockless_tools.local.event_sources import worker_functions
from clockless_tools.local.poller import DrainError, Invocation, SqsPoller, describe_drain
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.services import local_schedule
from clockless_tools.template.events import schedule_arn
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Schedule, Template
from clockless_tools.template.scheduler import ScheduleRef, expected_schedule, parameter_resolver


class OperationError(ToolError):
    """The operation was refused; the message says why and what to do."""


_TRACEBACK = "Traceback (most recent call last):"


def one_line(text: str, limit: int = 300) -> str:
    """An error as one line: a traceback embedded in it (Powertools' BatchProcessingError carries
    each record's) reduced to the exception it ends with, newlines folded, a long one cut."""
    if _TRACEBACK in text:
        head, _, trace = text.partition(_TRACEBACK)
        lines = trace.splitlines()
        frames = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "')]
        # After the last frame: its source line (indented), then the exception and its message.
        rest = lines[frames[-1] + 1 :] if frames else lines
        while rest and rest[0].startswith((" ", "\t")) and len(rest) > 1:
            rest = rest[1:]
        text = f"{head.strip()} {' '.join(rest)}"
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


class PartitionsFailing(OperationError):
    """The tick was claimed and fanned out, and its workers failed on some partition messages:
    they come back after the work queue's visibility timeout, the tick stays started."""

    def __init__(self, function_id: str, failed: int, error: str | None, drained: list[str]) -> None:
        self.function_id, self.failed, self.error, self.drained = function_id, failed, error, drained
        # The coordinator's response, once `invoke` knows it: the tick it claimed and fanned out.
        self.response: dict[str, Any] = {}
        why = f" ({error})" if error else ""
        super().__init__(
            f"{function_id} failed on {failed} message(s){why}: "
            + "; ".join(drained)
            + "; its logs say why, `clockless status` shows the tick's partitions"
        )


class ScheduleNotDeployed(OperationError):
    """The stack has no schedule for the job (a template newer than the deployment)."""


class JobTarget(Protocol):
    """Where jobs run: the local runtime or a deployed stack."""

    description: str

    def ledger(self) -> RunLedger: ...

    def invoke(self, job: str, event: dict[str, Any]) -> dict[str, Any]:
        """Invoke the job's function synchronously with a scheduler-shaped payload."""
        ...

    def schedule_arn(self, job: str) -> str | None: ...

    def schedule_spec(self, job: str) -> ScheduleSpec:
        """The job's schedule as the tick engine needs it (for a deployed rate() without StartDate,
        anchored on the deployed schedule's creation)."""
        ...

    def schedule(self, job: str) -> ScheduleRef:
        """The job's schedule in EventBridge Scheduler, and what template.yaml says it should be."""
        ...

    def operator(self) -> str:
        """Who is acting, for the ledger's record of a pause."""
        ...

    def dead_man_alarms(self, job: str) -> tuple[Any, list[str]]:
        """The CloudWatch client and the names of the alarms that watch the job's succeeded ticks."""
        ...

    def sqs(self) -> Any:
        """An SQS client for the target's queues."""
        ...

    def queue_url(self, logical_id: str) -> str:
        """The URL of one of the template's queues, or an OperationError saying it is not there."""
        ...

    def drain(self, job: str, scheduled_time: str | None = None) -> list[str]:
        """Run the job's workers on what its queues hold, where nothing else would (the local runtime);
        one line per queue drained, or PartitionsFailing when a message of the tick `scheduled_time`
        (None: any of the job's) failed: its work is not done. Other jobs' queues are left alone."""
        ...


def _retention_seconds(template: Template) -> int:
    return int(template.parameter_default("LedgerRetentionDays")) * 86400


class LocalTarget:
    """The running embedded DynamoDB (`clockless local up`) and the Docker-free runtime."""

    def __init__(self, template: Template, endpoint: str, names: LocalNames = LocalNames()) -> None:
        self.template = template
        self.names = names
        self.runtime = LocalLambdaRuntime(template, endpoint, names)
        self.endpoint = endpoint
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
                raise OperationError(
                    f"{function.logical_id} failed: {type(error).__name__}: {one_line(str(error))}"
                ) from error
        # A fanned-out tick's workers run to completion here, as Lambda's pollers would run them;
        # only this job's, and only this tick's failures are this tick's.
        try:
            lines = self.drain(job, str(event.get("scheduled_time")))
        except PartitionsFailing as failing:
            failing.response = dict(result)
            raise
        for line in lines:
            print(f"drained {line}", file=sys.stderr)
        return dict(result)

    def drain(self, job: str, scheduled_time: str | None = None) -> list[str]:
        try:
            # The functions the job's queues feed (as Lambda wires them), and those declared its workers.
            coordinator = self.template.function_for_job(job).logical_id
            workers = {*worker_functions(self.template, coordinator), *self.template.workers_of(coordinator)}
            with contextlib.redirect_stdout(sys.stderr):
                poller = SqsPoller(
                    self.runtime, self.endpoint, self.names, held=lambda source: source.function_id not in workers
                )
                invocations = poller.drain()
        except (DrainError, TemplateError) as error:
            raise OperationError(str(error)) from None
        lines = describe_drain(invocations, poller)
        failed = [(i, ids) for i in invocations if (ids := _failed_of(i, job, scheduled_time))]
        if failed:
            why = next((one_line(i.error) for i, _ in failed if i.error), None)
            raise PartitionsFailing(failed[0][0].function_id, sum(len(ids) for _, ids in failed), why, lines)
        return lines

    def schedule_arn(self, job: str) -> str | None:
        return schedule_arn(self.template.jobs[job], self.names)

    def schedule_spec(self, job: str) -> ScheduleSpec:
        return self.template.jobs[job].spec(self.template)

    def schedule(self, job: str) -> ScheduleRef:
        return local_schedule(self.template, job, local_client("scheduler", self.endpoint), self.names)

    def operator(self) -> str:
        return f"{getpass.getuser()}@{socket.gethostname()}"

    def dead_man_alarms(self, job: str) -> tuple[Any, list[str]]:
        return None, []  # the local runtime has no alarms

    def sqs(self) -> Any:
        return local_client("sqs", self.endpoint)

    def queue_url(self, logical_id: str) -> str:
        client = self.sqs()
        try:
            return str(client.get_queue_url(QueueName=self.names.queue_name(logical_id))["QueueUrl"])
        except client.exceptions.QueueDoesNotExist:
            raise OperationError(
                f"the local runtime has no queue {logical_id}: `make local-up` creates the template's queues"
            ) from None


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
        self._scheduler: Any = None
        self._session = session
        self._account: str | None = None
        self._stack_name = stack_name
        self._parameters: dict[str, str] | None = None

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
        located = self._deployed_schedule(self.template.jobs[job])
        if located is None:
            return None
        group, name = located
        return f"arn:aws:scheduler:{self._session.region_name}:{self._account_id()}:schedule/{group}/{name}"

    def _deployed_schedule(self, schedule: Schedule) -> tuple[str, str] | None:
        """(group, name) of the AWS::Scheduler::Schedule SAM generated for the event: SAM names it
        <Function><Event>; with OmitName its physical id is the generated name. The group is the
        one the event's GroupName names, read from this stack, not a constant."""
        name = self.physical.get(f"{schedule.function_id}{schedule.event_id}")
        if name is None:
            return None
        group = schedule.properties.get("GroupName")
        if group is None:
            return "default", name
        if isinstance(group, str):
            return group, name
        if isinstance(group, Mapping) and group.get("Ref") in self.physical:
            return str(self.physical[group["Ref"]]), name
        raise OperationError(
            f"{schedule.function_id}.Events.{schedule.event_id}: GroupName {group!r} names no group of this stack"
        )

    def schedule_spec(self, job: str) -> ScheduleSpec:
        schedule = self.template.jobs[job]
        spec = schedule.spec(self.template)
        if spec.kind != "rate" or spec.start_date is not None:
            return spec
        # No StartDate: the ticks run from the schedule's creation, which only the service knows.
        located = self._deployed_schedule(schedule)
        if located is None:
            raise OperationError(f"{job}: the stack has no schedule for it; deploy the current template.yaml first")
        group, name = located
        if self._scheduler is None:
            self._scheduler = self._session.client("scheduler")
        try:
            deployed = self._scheduler.get_schedule(Name=name, GroupName=group)
        except self._scheduler.exceptions.ClientError as error:
            raise OperationError(f"cannot read schedule {group}/{name} (scheduler:GetSchedule): {error}") from None
        try:
            return ScheduleSpec.of(
                deployed["ScheduleExpression"],
                timezone=deployed.get("ScheduleExpressionTimezone"),
                start_date=deployed.get("StartDate"),
                end_date=deployed.get("EndDate"),
                created=deployed.get("CreationDate"),
            )
        except ScheduleExpressionError as error:
            raise OperationError(f"deployed schedule {group}/{name}: {error}") from None

    def _caller(self) -> dict[str, Any]:
        # GetCallerIdentity needs no IAM permission.
        return dict(self._session.client("sts").get_caller_identity())

    def _account_id(self) -> str:
        if self._account is None:
            self._account = str(self._caller()["Account"])
        return self._account

    def operator(self) -> str:
        return str(self._caller()["Arn"])

    def dead_man_alarms(self, job: str) -> tuple[Any, list[str]]:
        names = [self.physical[i] for i in dead_man_alarm_ids(self.template, job) if i in self.physical]
        return self._session.client("cloudwatch"), names

    def sqs(self) -> Any:
        return self._session.client("sqs")

    def drain(self, job: str, scheduled_time: str | None = None) -> list[str]:
        return []  # Lambda's own pollers run the workers

    def queue_url(self, logical_id: str) -> str:
        if logical_id not in self.physical:
            raise OperationError(f"{self.description} has no {logical_id}: deploy the current template.yaml first")
        return str(self.physical[logical_id])  # a queue's physical id is its URL

    def _deployed_parameters(self) -> dict[str, str]:
        """The stack's parameter values, over the template's defaults."""
        if self._parameters is None:
            declared = self.template.document.get("Parameters") or {}
            values = {name: str(self.template.parameter_default(name)) for name in declared}
            stack = self._session.client("cloudformation").describe_stacks(StackName=self._stack_name)["Stacks"][0]
            values.update({p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])})
            self._parameters = values
        return self._parameters

    def _arn(self, logical_id: str) -> str:
        physical = self.physical.get(logical_id, logical_id)
        region, account = self._session.region_name, self._account_id()
        kind = self.template.resources.get(logical_id, {}).get("Type")
        if kind in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            return f"arn:aws:lambda:{region}:{account}:function:{physical}"
        if kind == "AWS::SQS::Queue":  # the physical id is the queue's URL
            return f"arn:aws:sqs:{region}:{account}:{physical.rsplit('/', 1)[-1]}"
        if kind == "AWS::DynamoDB::Table":
            return f"arn:aws:dynamodb:{region}:{account}:table/{physical}"
        return str(physical)

    def schedule(self, job: str) -> ScheduleRef:
        schedule = self.template.jobs[job]
        name = self.physical.get(f"{schedule.function_id}{schedule.event_id}")
        if name is None:
            raise ScheduleNotDeployed(
                f"{self.description} has no schedule {schedule.function_id}{schedule.event_id} for {job!r}: "
                "deploy the current template.yaml first"
            )
        resolve = parameter_resolver(self._deployed_parameters(), self._arn, lambda i: self.physical.get(i, i))
        group = resolve(schedule.properties.get("GroupName", "default"))
        return ScheduleRef(
            job=job,
            client=self._session.client("scheduler"),
            name=name,
            group=str(group),
            expected=expected_schedule(schedule, function_arn=self._arn(schedule.function_id), resolve=resolve),
        )


def _failed_of(invocation: Invocation, job: str, scheduled_time: str | None) -> list[str]:
    """The invocation's failed messages that are the job's (and, given, that tick's): a message of
    another tick drained at the same time is that tick's failure, not this one's."""
    mine = []
    for message in invocation.messages:
        if message.message_id not in invocation.failed:
            continue
        body = message.json()
        if isinstance(body, Mapping) and (
            body.get("job") != job or (scheduled_time is not None and body.get("scheduled_time") != scheduled_time)
        ):
            continue
        mine.append(message.message_id)
    return mine


def dead_man_alarm_ids(template: Template, job: str) -> list[str]:
    """The alarms on the job's TickSucceeded metric: a paused job would set them off."""
    found = []
    for logical_id, resource in template.resources_of_type("AWS::CloudWatch::Alarm").items():
        properties = resource.get("Properties") or {}
        # A single-metric alarm names its metric at the top; a metric-math one in Metrics[].MetricStat.
        metrics = [properties] + [
            (query.get("MetricStat") or {}).get("Metric") or {} for query in properties.get("Metrics") or []
        ]
        for metric in metrics:
            dimensions = {d.get("Name"): d.get("Value") for d in metric.get("Dimensions") or []}
            if metric.get("MetricName") == "TickSucceeded" and dimensions.get("job") == job:
                found.append(logical_id)
                break
    return found


def _ledger_logical_id(template: Template) -> str:
    ledgers = template.tables_of_kind("ledger")
    if ledgers:
        return ledgers[0]
    raise TemplateError("template.yaml declares no table with Metadata clockless.kind: ledger")


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
