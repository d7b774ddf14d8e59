"""The harness: one embedded DynamoDB, the runtime, and a tick measured with and without the kit."""

from __future__ import annotations

import contextlib
import json
import statistics
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from clockless import JobRun, KitSettings, Tick, Trigger, format_scheduled_time
from clockless_tools.bench.meter import Measured, measure
from clockless_tools.bench.results import CLEANUP_JOB, CLEANUP_TICK, WINDOW_JOB, WINDOW_TICK, BenchError
from clockless_tools.bench.workloads import Layout, Workload, empty_session_item, session_in_use_item
from clockless_tools.local.dynamodb import (
    EmbeddedDynamoDB,
    create_tables,
    delete_tables,
    dynamodb_client,
    local_client,
    patched_environ,
)
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.units import moto_dynamodb_backend
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template
from session_cleanup.logic import clean_up_empty_sessions
from session_cleanup.repository import EMPTY_INDEX_KEYS, EMPTY_INDEX_SHARDS, DynamoSessionStore, SessionModel
from session_cleanup.settings import SessionCleanupSettings
from window_generation.logic import business_date_of, generate_windows
from window_generation.repository import (
    DUE_INDEX_KEYS,
    DUE_INDEX_SHARDS,
    DynamoProgramStore,
    ProgramModel,
    _program_item,
)
from window_generation.settings import WindowGenerationSettings

# Partitions a tick fans out to: the shards of the job's sparse index.
PARTITIONS: Final = {WINDOW_JOB: DUE_INDEX_SHARDS, CLEANUP_JOB: EMPTY_INDEX_SHARDS}
# The index shard keys each job writes, read `PARTITIONS` to a tick (docs/fan-out.md#index-keys-and-partitions).
INDEX_KEYS: Final = {WINDOW_JOB: DUE_INDEX_KEYS, CLEANUP_JOB: EMPTY_INDEX_KEYS}


class Harness:
    """The template's tables on moto's server and both jobs' functions, for one bench run."""

    def __init__(self, template: Template, endpoint: str) -> None:
        self.template = template
        self.endpoint = endpoint
        # the embedded server in this process, when the bench started it: capacity is enforced there
        self.server: EmbeddedDynamoDB | None = None
        self.runtime = LocalLambdaRuntime(template, endpoint)
        self.client = dynamodb_client(endpoint)
        self.functions = {job: template.function_for_job(job).logical_id for job in (WINDOW_JOB, CLEANUP_JOB)}
        window_env = self.runtime.environment(self.functions[WINDOW_JOB])
        cleanup_env = self.runtime.environment(self.functions[CLEANUP_JOB])
        self.window_settings = WindowGenerationSettings.from_env(window_env)
        self.cleanup_settings = SessionCleanupSettings.from_env(cleanup_env)
        kit = KitSettings.from_env(window_env)
        self.bookkeeping_tables = frozenset({kit.idempotency_table, kit.ledger_table})
        self.ledger_table = kit.ledger_table
        # Each job's work queue and DLQ on moto's SQS (the embedded server speaks it), named here:
        # the template's queue URLs resolve to nothing locally.
        self.sqs = local_client("sqs", endpoint)
        self.work_queues = {job: self._create_queues(job) for job in (WINDOW_JOB, CLEANUP_JOB)}
        self.layout = Layout(
            business_date=business_date_of(WINDOW_TICK, self.window_settings.operating_time_zones),
            cleanup_tick=CLEANUP_TICK,
            grace=self.cleanup_settings.grace,
        )

    def _create_queues(self, job: str) -> tuple[str, str]:
        # A fresh name each time: SQS allows one purge a minute, and a deleted name stays taken a while.
        name = f"bench-{job}-work-{uuid.uuid4().hex[:8]}"
        dlq = self.sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
        queue = self.sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "1800"})["QueueUrl"]
        return str(queue), str(dlq)

    def work_environment(self, job: str) -> dict[str, str]:
        """What the job's coordinator and worker need beside the template's environment."""
        queue, dlq = self.work_queues[job]
        return {"AWS_ENDPOINT_URL_SQS": self.endpoint, "WORK_QUEUE_URL": queue, "WORK_DEAD_LETTER_QUEUE_URL": dlq}

    @contextlib.contextmanager
    def function_environment(self, job: str, function_id: str | None = None) -> Iterator[None]:
        """The function's environment (the job's coordinator by default) with its work queues."""
        function = self.runtime.function_environment(function_id or self.functions[job])
        with function, patched_environ(self.work_environment(job)):
            yield

    def reset_tables(self) -> None:
        """Fresh tables, and empty work queues (a coordinator left its partition messages there)."""
        delete_tables(self.template, self.endpoint)
        create_tables(self.template, self.endpoint)
        self.reset_queues()

    def reset_queues(self) -> None:
        for queue, dlq in self.work_queues.values():
            for url in (queue, dlq):
                self.sqs.delete_queue(QueueUrl=url)
        self.work_queues = {job: self._create_queues(job) for job in self.work_queues}

    def seed(self, workload: Workload, *, in_process: bool) -> float:
        """Load a workload: over HTTP through the repositories' own write path, or straight into
        moto's state in this process (100k items over HTTP take minutes; the ticks never do)."""
        started = time.perf_counter()
        active, ended = self.layout.programs(workload)
        empty, in_use = self.layout.sessions(workload)
        if in_process:
            backend = moto_dynamodb_backend()
            programs_table, sessions_table = self.window_settings.programs_table, self.cleanup_settings.sessions_table
            if not {programs_table, sessions_table} <= set(backend.tables):
                raise BenchError(f"{self.endpoint} is not moto's server in this process: cannot seed it in-process")
            for program in active:
                backend.put_item(programs_table, _program_item(program, active=True).serialize())
            for program in ended:
                backend.put_item(programs_table, _program_item(program, active=False).serialize())
            for session in empty:
                backend.put_item(sessions_table, empty_session_item(session).serialize())
            for session, exercises in in_use:
                backend.put_item(sessions_table, session_in_use_item(session, exercises).serialize())
        else:
            with patched_environ(self.runtime.environment(self.functions[WINDOW_JOB])):
                programs = DynamoProgramStore(self.window_settings.programs_table, self.window_settings.windows_table)
                programs.save_programs(active, active=True)
                programs.save_programs(ended, active=False)
                sessions = DynamoSessionStore(self.cleanup_settings.sessions_table)
                sessions.start_sessions([*empty, *(session for session, _ in in_use)])
                for session, exercises in in_use:
                    for _ in range(exercises):
                        sessions.log_exercise(session.tenant_id, session.session_id)
        return time.perf_counter() - started

    def check_in_process_items_match_the_repositories(self) -> None:
        """The in-process seed builds items itself; fail loudly if they drift from the repositories'."""
        sample = Workload(due_programs=1, ended_programs=1, expired_empty_sessions=1, sessions_in_use=1)
        seen = []
        for in_process in (False, True):
            self.reset_tables()
            self.seed(sample, in_process=in_process)
            seen.append(
                {
                    table: sorted(
                        (
                            item
                            for page in self.client.get_paginator("scan").paginate(TableName=table)
                            for item in page["Items"]
                        ),
                        key=lambda item: json.dumps(item, sort_keys=True),
                    )
                    for table in (self.window_settings.programs_table, self.cleanup_settings.sessions_table)
                }
            )
        over_http, in_process_items = seen
        if over_http != in_process_items:
            raise BenchError(
                "in-process seeding writes different items than the repositories do; update "
                f"bench.empty_session_item/session_in_use_item: {over_http} != {in_process_items}"
            )

    def tick(self, job: str, *, attempt: int = 1, scheduled: datetime | None = None) -> Tick:
        scheduled = scheduled or (WINDOW_TICK if job == WINDOW_JOB else CLEANUP_TICK)
        names = LocalNames()
        arn = f"arn:aws:scheduler:{names.region}:{names.account_id}:schedule/default/{job}"
        return Tick(job, scheduled, arn, attempt, str(uuid.uuid4()), Trigger.SCHEDULE)

    def deliver(self, job: str, tick: Tick, *, write_units: bool = False) -> Measured:
        """The tick through the function's handler, as Lambda calls it."""
        function_id = self.functions[job]
        with self.function_environment(job):
            event, context = tick.to_event(), self.runtime.context(function_id)
            handler = self.runtime.handler(function_id)
            return measure(
                lambda: handler(event, context),
                bookkeeping_tables=self.bookkeeping_tables,
                write_units=write_units,
                allow_other_services=True,
            )

    def call_bare(self, job: str, tick: Tick, *, write_units: bool = False) -> Measured:
        """The same job function the handler wraps, called without the kit (a coordinator: it fans
        the tick out to the work queue)."""
        function_id = self.functions[job]
        with self.function_environment(job):
            bare = getattr(self.runtime.handler(function_id), "__wrapped__", None)
            if bare is None:
                raise BenchError(f"{function_id}'s handler is not a ScheduledJob handler (no __wrapped__)")
            run = JobRun(tick=tick)
            return measure(
                lambda: bare(run),
                bookkeeping_tables=self.bookkeeping_tables,
                write_units=write_units,
                allow_other_services=True,
            )

    def sequential_loop(self, job: str, tick: Tick, *, write_units: bool = False) -> Measured:
        """The job's sequential logic alone (one item after another, as every tick ran before
        fan-out), over its repository: the baseline the fanned-out path is measured against."""
        with self.function_environment(job):
            if job == WINDOW_JOB:
                programs = DynamoProgramStore(self.window_settings.programs_table, self.window_settings.windows_table)
                business_date = business_date_of(tick.scheduled_time, self.window_settings.operating_time_zones)

                def run() -> Mapping[str, Any]:
                    return generate_windows(programs, business_date=business_date, tick_key=tick.key).as_summary()

            else:
                sessions = DynamoSessionStore(self.cleanup_settings.sessions_table)

                def run() -> Mapping[str, Any]:
                    return clean_up_empty_sessions(
                        sessions, now=tick.scheduled_time, grace=self.cleanup_settings.grace
                    ).as_summary()

            return measure(run, bookkeeping_tables=self.bookkeeping_tables, write_units=write_units)

    def time_empty_index_query(self, job: str) -> float:
        """Seconds moto takes to answer, after the tick, the job's index query for one shard: it
        returns nothing (the work is done), yet moto scans every item of the table to find that."""
        if job == WINDOW_JOB:
            table, index = self.window_settings.programs_table, ProgramModel.due_index.Meta.index_name
            shard, range_key, upper = "due_shard", "current_window_end", self.layout.business_date.isoformat()
        else:
            table, index = self.cleanup_settings.sessions_table, SessionModel.empty_index.Meta.index_name
            cutoff = self.layout.cleanup_tick - self.layout.grace
            shard, range_key, upper = "empty_shard", "started_at", format_scheduled_time(cutoff)
        request = {
            "TableName": table,
            "IndexName": index,
            "KeyConditionExpression": "#shard = :shard AND #range <= :upper",
            "ExpressionAttributeNames": {"#shard": shard, "#range": range_key},
            "ExpressionAttributeValues": {":shard": {"S": "0"}, ":upper": {"S": upper}},
        }
        started = time.perf_counter()
        found = self.client.query(**request)["Count"]
        seconds = time.perf_counter() - started
        if found:
            raise BenchError(f"{job}: {found} item(s) still due after the tick")
        return seconds

    def count_items(self, table: str) -> int:
        paginator = self.client.get_paginator("scan")
        return sum(page["Count"] for page in paginator.paginate(TableName=table, Select="COUNT"))


def effect_of(job: str, summary: Mapping[str, Any]) -> int:
    """How much a tick of the job did: windows created, sessions deleted (the sequential loop,
    or the ledger's summary of a fanned-out tick: items applied)."""
    if "applied" in summary:
        return int(summary["applied"])
    return int(summary["windows_created" if job == WINDOW_JOB else "sessions_deleted"])


def partitions_sent(job: str, result: Mapping[str, Any]) -> int:
    """A coordinator's delivery: executed, and the partitions it sent (every shard of its index)."""
    summary = result.get("summary") or {}
    partitions = int((summary.get("fan_out") or {}).get("partitions", 0))
    if result.get("outcome") != "executed" or partitions != PARTITIONS[job]:
        raise BenchError(f"{job}: expected a tick fanned out to {PARTITIONS[job]} partitions, got {result}")
    return partitions


def expected_effect(job: str, workload: Workload) -> int:
    """How much a first tick of the job must do on the workload."""
    return workload.windows_expected if job == WINDOW_JOB else workload.expired_empty_sessions


def executed(job: str, measured: Measured) -> Mapping[str, Any]:
    """A coordinator's delivery that fanned the tick out; its summary."""
    partitions_sent(job, measured.result)
    summary: Mapping[str, Any] = measured.result["summary"]
    return summary


def same(job: str, what: str, values: Sequence[Any]) -> Any:
    if any(value != values[0] for value in values):
        raise BenchError(f"{job}: {what} differs between identical runs: {values}")
    return values[0]


def median_ms(measured: Sequence[Measured]) -> float:
    return statistics.median(m.seconds for m in measured) * 1000
