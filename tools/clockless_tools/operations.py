"""Operating scheduled jobs: which ticks never succeeded, and replaying them with a tick's exact
semantics. Works against the local runtime or a deployed stack through the same `JobTarget`."""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

import boto3

from clockless import MalformedTickError, Tick, Trigger, format_scheduled_time
from clockless.ledger import STATUS_FAILED, STATUS_SKIPPED, STATUS_SUCCEEDED, LedgerEntry, RunLedger
from clockless.tick import reject_future, utc_now
from clockless_tools.local import dynamodb_client
from clockless_tools.runtime import LocalLambdaRuntime
from clockless_tools.schedule import next_ticks, ticks_between
from clockless_tools.template import LocalNames, Template, TemplateError

DEFAULT_MAX_BACKFILL_TICKS = 200
DEFAULT_MAX_BACKFILL_RANGE = timedelta(days=31)


class OperationError(Exception):
    """The operation was refused; the message says why and what to do."""


class BackfillPolicy(StrEnum):
    ALL = "all"  # replay every missing tick, oldest first
    LATEST = "latest"  # replay only the newest missing tick (the job heals the rest itself)
    SKIP = "skip"  # replay none; record each as deliberately skipped so it stops being reported


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


@dataclass(frozen=True)
class JobStatus:
    job: str
    function_id: str
    expression: str
    window_start: datetime
    window_end: datetime
    last_success: LedgerEntry | None
    last_failure: LedgerEntry | None
    next_ticks: list[datetime]
    expected: int
    missing: list[datetime]
    skipped: list[datetime] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def entry(e: LedgerEntry | None) -> dict[str, Any] | None:
            if e is None:
                return None
            return {
                "scheduled_time": format_scheduled_time(e.scheduled_time),
                "status": e.status,
                "attempts": e.attempts,
                "trigger": e.trigger,
                "finished_at": e.finished_at,
                "error": e.error,
            }

        return {
            "job": self.job,
            "function": self.function_id,
            "schedule": self.expression,
            "window": [format_scheduled_time(self.window_start), format_scheduled_time(self.window_end)],
            "last_success": entry(self.last_success),
            "last_failure": entry(self.last_failure),
            "next_ticks": [format_scheduled_time(t) for t in self.next_ticks],
            "expected": self.expected,
            "missing": [format_scheduled_time(t) for t in self.missing],
            "skipped": [format_scheduled_time(t) for t in self.skipped],
        }


def _entries_by_time(ledger: RunLedger, job: str, start: datetime, end: datetime) -> dict[datetime, LedgerEntry]:
    return {entry.scheduled_time: entry for entry in ledger.entries(job, start, end)}


def missing_ticks(
    template: Template, ledger: RunLedger, job: str, start: datetime, end: datetime, *, now: datetime
) -> list[datetime]:
    """Ticks the schedule expected in [start, end), up to `now`, that the ledger does not show as
    succeeded or skipped. A tick after `now` has not happened: it is never missing."""
    expected = due_ticks(template, job, start, end, now=now)
    return _not_accounted_for(expected, _entries_by_time(ledger, job, start, end))


def due_ticks(template: Template, job: str, start: datetime, end: datetime, *, now: datetime) -> list[datetime]:
    """The schedule's ticks in [start, end) that are due at `now`."""
    return [t for t in ticks_between(template.jobs[job].expression, start, end) if t <= now]


def _not_accounted_for(expected: list[datetime], entries: dict[datetime, LedgerEntry]) -> list[datetime]:
    return [t for t in expected if t not in entries or entries[t].status not in (STATUS_SUCCEEDED, STATUS_SKIPPED)]


def job_status(template: Template, target: JobTarget, job: str, *, now: datetime, window: timedelta) -> JobStatus:
    schedule = template.jobs[job]
    start, end = now - window, now
    ledger = target.ledger()
    entries = _entries_by_time(ledger, job, start, end)
    expected = ticks_between(schedule.expression, start, end)
    failures = [e for e in entries.values() if e.status == STATUS_FAILED]
    last_success_time = ledger.last_success_before(job, now + timedelta(seconds=1))
    last_success = None
    if last_success_time is not None:
        last_success = entries.get(last_success_time) or next(
            iter(ledger.entries(job, last_success_time, last_success_time + timedelta(seconds=1))), None
        )
    return JobStatus(
        job=job,
        function_id=schedule.function_id,
        expression=schedule.expression,
        window_start=start,
        window_end=end,
        last_success=last_success,
        last_failure=max(failures, key=lambda e: e.scheduled_time) if failures else None,
        next_ticks=next_ticks(schedule.expression, now, 3),
        expected=len(expected),
        missing=_not_accounted_for(expected, entries),
        skipped=[t for t in expected if t in entries and entries[t].status == STATUS_SKIPPED],
    )


def _require_job(template: Template, job: str) -> None:
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


@dataclass
class BackfillResult:
    job: str
    policy: BackfillPolicy
    missing: list[datetime]
    planned: list[datetime]
    outcomes: dict[str, str] = field(default_factory=dict)  # scheduled time -> outcome
    dry_run: bool = False
    # Ticks of [start, end) after now: not missing, never replayed; the schedule will deliver them.
    not_yet_due: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "policy": self.policy.value,
            "dry_run": self.dry_run,
            "missing": [format_scheduled_time(t) for t in self.missing],
            "planned": [format_scheduled_time(t) for t in self.planned],
            "outcomes": self.outcomes,
            "not_yet_due": self.not_yet_due,
        }


def backfill(
    template: Template,
    target: JobTarget,
    job: str,
    *,
    start: datetime,
    end: datetime,
    policy: BackfillPolicy,
    dry_run: bool = False,
    force: bool = False,
    max_ticks: int = DEFAULT_MAX_BACKFILL_TICKS,
    max_range: timedelta = DEFAULT_MAX_BACKFILL_RANGE,
    on_tick: Callable[[datetime, str], None] = lambda _t, _o: None,
    now: datetime | None = None,
) -> BackfillResult:
    """Replay each tick in [start, end) that never succeeded, through the job's own function.
    Ticks after `now` (default: this machine's clock) are left out: they have not happened."""
    _require_job(template, job)
    if end <= start:
        raise OperationError(
            f"--to ({format_scheduled_time(end)}) must be after --from ({format_scheduled_time(start)})"
        )
    now = utc_now() if now is None else now
    expected = due_ticks(template, job, start, end, now=now)
    if not force and (end - start > max_range or len(expected) > max_ticks):
        raise OperationError(
            f"refusing to backfill {len(expected)} ticks over {end - start} (limits: {max_ticks} ticks, "
            f"{max_range}); narrow the range or pass --force"
        )
    missing = missing_ticks(template, target.ledger(), job, start, end, now=now)
    planned = {BackfillPolicy.ALL: missing, BackfillPolicy.LATEST: missing[-1:], BackfillPolicy.SKIP: missing}[policy]
    not_yet_due = len(ticks_between(template.jobs[job].expression, start, end)) - len(expected)
    result = BackfillResult(
        job=job, policy=policy, missing=missing, planned=planned, dry_run=dry_run, not_yet_due=not_yet_due
    )
    if dry_run:
        return result
    for scheduled_time in planned:
        key = format_scheduled_time(scheduled_time)
        if policy is BackfillPolicy.SKIP:
            recorded = target.ledger().record_skipped(job, scheduled_time, reason="skipped by clockless backfill")
            outcome = "skipped" if recorded else "already recorded"
        else:
            response = target.invoke(job, tick_event(target, job, scheduled_time, Trigger.BACKFILL))
            outcome = str(response.get("outcome"))
        result.outcomes[key] = outcome
        on_tick(scheduled_time, outcome)
    return result


def run_now(
    target: JobTarget, template: Template, job: str, *, at: datetime | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """A manual tick with the scheduler's payload contract: at `at`, or now truncated to the minute.
    A tick from the future is refused before anything is invoked, as the kit would refuse it."""
    _require_job(template, job)
    now = utc_now() if now is None else now
    scheduled_time = (at or now).astimezone(UTC).replace(second=0, microsecond=0)
    try:
        reject_future(scheduled_time, now=now, field="--at")
    except MalformedTickError as error:
        raise OperationError(f"--at {error.problem}") from None
    return target.invoke(job, tick_event(target, job, scheduled_time, Trigger.MANUAL))
