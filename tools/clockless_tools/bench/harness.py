"""`make bench`: what a scheduled tick costs, each figure beside a baseline measured in the same run.

1. Kit overhead: DynamoDB requests, read units and wall time of a first and of a duplicate
   delivery, against the job's own function called without the kit (its logic and repository).
2. Scale: requests and read units of one tick while the table grows (1k, 10k, 100k items) and the
   work stays fixed.
3. Throughput: windows created per second at 10k due programs, the job as built against the naive
   loop a newcomer would write.
4. Cold start: import time of each handler in a fresh interpreter, against `import boto3` alone,
   from the source tree and from what `sam build` produces.
5. Artifacts: what `sam build` produces against Lambda's 250 MB limit, and the layer without the
   packages the python3.13 runtime already ships.

Every measured tick goes over HTTP to moto's server on loopback, running in this process. Results
are keyed by `Figure.key`, stable from run to run, so two `bench/results.json` can be compared.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import json
import math
import os
import platform
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TextIO

from clockless import JobRun, KitSettings, Tick, Trigger
from clockless.dynamo import shard_for
from clockless_tools.local.botocore_hooks import after_each_exchange, count_requests
from clockless_tools.local.dynamodb import (
    EmbeddedDynamoDB,
    create_tables,
    delete_tables,
    dynamodb_client,
    patched_environ,
)
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.model import LocalNames, Template
from session_cleanup.logic import SessionRef
from session_cleanup.repository import EMPTY_INDEX_SHARDS, DynamoSessionStore, SessionModel
from session_cleanup.settings import SessionCleanupSettings
from window_generation.logic import Program, business_date_of
from window_generation.repository import DynamoProgramStore, ProgramModel, _program_item
from window_generation.settings import WindowGenerationSettings

RESULTS_SCHEMA: Final = 1
WINDOW_JOB: Final = "window-generation"
CLEANUP_JOB: Final = "session-cleanup"
# The ticks the README's demo shows; fixed, so every run lays its data out around the same dates.
WINDOW_TICK: Final = datetime(2026, 11, 28, 14, 0, tzinfo=UTC)
CLEANUP_TICK: Final = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
TENANT: Final = "tenant-bench"

KIT_ADDED_REQUESTS_TARGET: Final = 4
SCALE_RATIO_TARGET: Final = 1.1
TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"


class BenchError(RuntimeError):
    """The bench could not measure what it set out to (wrong effect, inconsistent counts...)."""


@dataclass(frozen=True, slots=True)
class BenchSizes:
    """How much each measurement does. `FULL` is `make bench`; `QUICK` keeps the machinery tested."""

    first_deliveries: int = 10
    duplicates: int = 30
    scale_table_items: tuple[int, ...] = (1_000, 10_000, 100_000)
    scale_work: int = 50
    throughput_programs: int = 10_000
    imports: int = 10
    sam_build: bool = True
    # An untimed first round, so making clients, connections and imports is not timed.
    warm_up: bool = True


FULL: Final = BenchSizes()
QUICK: Final = BenchSizes(
    first_deliveries=1,
    duplicates=1,
    scale_table_items=(40, 160),
    scale_work=4,
    throughput_programs=25,
    imports=1,
    sam_build=False,
    warm_up=False,
)


# ------------------------------------------------------------------------------------------ figures


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured value beside its baseline from the same run."""

    key: str
    label: str
    unit: str
    value: float
    baseline: float | None
    baseline_label: str
    target: str = ""
    met: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    def as_dict(self) -> dict[str, Any]:
        ratio = self.ratio
        return {
            "label": self.label,
            "unit": self.unit,
            "value": _round(self.value),
            "baseline": None if self.baseline is None else _round(self.baseline),
            "baseline_label": self.baseline_label,
            "ratio": None if ratio is None else round(ratio, 3),
            "target": self.target,
            "met": self.met,
        }


def _round(value: float) -> float:
    return round(value, 3) if isinstance(value, float) and not value.is_integer() else value


@dataclass
class BenchResults:
    figures: list[Figure] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    def add(self, section: str, figures: Iterable[Figure], details: Mapping[str, Any]) -> None:
        self.figures.extend(figures)
        self.details[section] = dict(details)

    def figure(self, key: str) -> Figure:
        for candidate in self.figures:
            if candidate.key == key:
                return candidate
        raise KeyError(key)

    @property
    def missed(self) -> list[Figure]:
        return [f for f in self.figures if f.met is False]

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": RESULTS_SCHEMA,
            "environment": self.environment,
            "figures": {f.key: f.as_dict() for f in self.figures},
            "details": self.details,
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------- what a request reads


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def _binary_size(data: Any) -> int:
    # On the wire a binary value is base64; DynamoDB counts its raw bytes.
    return len(data) if isinstance(data, bytes) else len(str(data).rstrip("=")) * 3 // 4


_SCALAR_SIZES: Final[dict[str, Callable[[Any], int]]] = {
    "S": lambda data: len(str(data).encode("utf-8")),
    "N": lambda data: _number_size(str(data)),
    "B": _binary_size,
    "BOOL": lambda _data: 1,
    "NULL": lambda _data: 1,
}
_SET_MEMBERS: Final = {"SS": "S", "NS": "N", "BS": "B"}


def attribute_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value, as DynamoDB counts them ("Item sizes and formats")."""
    ((kind, data),) = value.items()
    if kind in _SCALAR_SIZES:
        return _SCALAR_SIZES[kind](data)
    if kind in _SET_MEMBERS:
        return sum(_SCALAR_SIZES[_SET_MEMBERS[kind]](member) for member in data)
    # A list or map: 3 bytes, plus 1 byte and the size of each element (and a map's key names).
    if kind == "L":
        return 3 + sum(attribute_size(member) + 1 for member in data)
    if kind == "M":
        return 3 + sum(len(name.encode("utf-8")) + attribute_size(member) + 1 for name, member in data.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes of an item: each attribute's name plus its value."""
    return sum(len(name.encode("utf-8")) + attribute_size(value) for name, value in item.items())


def read_units(operation: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> float:
    """Read capacity units a request consumes, computed from what it returned.

    A Query or Scan sums the sizes of the items it read and rounds up to 4 KB once; a GetItem
    rounds its one item; a miss still costs one unit. Eventually consistent reads (every read on a
    GSI) cost half. A Scan's filter runs after the read, so for a filtered Scan this is a floor.
    """
    factor = 1.0 if request.get("ConsistentRead") else 0.5
    if operation in ("Query", "Scan"):
        size = sum(item_size(item) for item in response.get("Items") or [])
        return max(1, math.ceil(size / 4096)) * factor
    if operation == "GetItem":
        item = response.get("Item")
        return max(1, math.ceil((item_size(item) if item else 0) / 4096)) * factor
    if operation == "BatchGetItem":
        items = [item for found in (response.get("Responses") or {}).values() for item in found]
        return sum(max(1, math.ceil(item_size(item) / 4096)) * factor for item in items)
    return 0.0


def tables_named(request: Mapping[str, Any]) -> frozenset[str]:
    names = set()
    if "TableName" in request:
        names.add(str(request["TableName"]))
    for entry in request.get("TransactItems") or []:
        for operation in entry.values():
            names.add(str(operation["TableName"]))
    names.update(str(name) for name in request.get("RequestItems") or {})
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class DynamoCall:
    operation: str
    tables: frozenset[str]
    read_units: float


class DynamoMeter:
    """Every DynamoDB request sent while active: its tables and the read units its response cost."""

    def __init__(self) -> None:
        self.calls: list[DynamoCall] = []
        self._lock = threading.Lock()

    def record(self, request: Any, response: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else str(target)
        if not target.startswith("DynamoDB_"):
            return
        operation = target.rsplit(".", 1)[-1]
        body = json.loads(request.body or b"{}")
        answer = json.loads(response.content or b"{}") if response.status_code == 200 else {}
        call = DynamoCall(operation, tables_named(body), read_units(operation, body, answer))
        with self._lock:
            self.calls.append(call)

    @property
    def read_units(self) -> float:
        return sum(call.read_units for call in self.calls)

    @property
    def tables(self) -> frozenset[str]:
        return frozenset(name for call in self.calls for name in call.tables)

    def requests_outside(self, tables: Iterable[str]) -> int:
        excluded = set(tables)
        return sum(1 for call in self.calls if not call.tables <= excluded)


@contextlib.contextmanager
def meter_dynamodb() -> Iterator[DynamoMeter]:
    """Every DynamoDB request answered while active, with what its response returned."""
    meter = DynamoMeter()
    with after_each_exchange(meter.record):
        yield meter


@dataclass(frozen=True, slots=True)
class Measured:
    """One action: its requests (counted exactly), the tables it touched, read units, wall time."""

    requests: int
    operations: Mapping[str, int]
    tables: frozenset[str]
    domain_requests: int
    read_units: float
    seconds: float
    result: Any


def measure(action: Callable[[], Any], *, bookkeeping_tables: Iterable[str] = ()) -> Measured:
    with count_requests() as counter, meter_dynamodb() as meter:
        started = time.perf_counter()
        result = action()
        seconds = time.perf_counter() - started
    if counter.total != len(meter.calls):
        raise BenchError(
            f"{counter.total - len(meter.calls)} request(s) other than DynamoDB: {dict(counter.operations)}"
        )
    return Measured(
        requests=counter.total,
        operations=dict(sorted(counter.operations.items())),
        tables=meter.tables,
        domain_requests=meter.requests_outside(bookkeeping_tables),
        read_units=meter.read_units,
        seconds=seconds,
        result=result,
    )


# ------------------------------------------------------------------------- moto, for a bench


@contextlib.contextmanager
def moto_transactions_snapshot_touched_items() -> Iterator[None]:
    """moto copies every table a transaction names, all its items, so that it can roll back: ~0.2 s
    per transaction at 10k items, a cost DynamoDB does not have, which would swamp what we measure.
    While active, a transaction snapshots only the items it names and restores exactly those when
    it fails; its outcome is the same. Only the bench uses it (the tests run stock moto)."""
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    class TablesAreNotCopied:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    stock = models.DynamoDBBackend.transact_write_items

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        touched = [snapshot for entry in transact_items for snapshot in _snapshots(backend, entry)]
        try:
            stock(backend, transact_items)
        except BaseException:
            for table_name, key, item in reversed(touched):
                if item is not None:
                    backend.get_table(table_name).put_item(item.to_json()["Attributes"])
                elif backend.get_item(table_name, key) is not None:
                    backend.delete_item(table_name, key)
            raise

    setattr(models, "copy", TablesAreNotCopied)  # noqa: B010 - the module moto copies tables with
    setattr(models.DynamoDBBackend, "transact_write_items", transact_write_items)  # noqa: B010
    try:
        yield
    finally:
        setattr(models.DynamoDBBackend, "transact_write_items", stock)  # noqa: B010
        setattr(models, "copy", copy)  # noqa: B010


def _snapshots(backend: Any, entry: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], Any]]:
    for operation_type, operation in entry.items():
        table_name = operation.get("TableName")
        if table_name not in backend.tables:
            continue  # moto rejects it before writing anything
        if operation_type == "Put":
            table = backend.get_table(table_name)
            key_names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
            if not all(name in operation["Item"] for name in key_names):
                continue
            key = {name: operation["Item"][name] for name in key_names}
        else:
            key = operation["Key"]
        yield table_name, key, copy.deepcopy(backend.get_item(table_name, key))


def moto_dynamodb_backend() -> Any:
    """moto's DynamoDB state in this process, which the embedded server serves."""
    from moto.backends import get_backend

    from clockless_tools.local.dynamodb import LOCAL_REGION

    return get_backend("dynamodb")[LocalNames().account_id][LOCAL_REGION]


def moto_capacity_is_size_based(client: Any, table: str, index: str, shard_attribute: str) -> dict[str, Any]:
    """Ask moto for ConsumedCapacity on a GSI query that reads many items and on one that reads one."""
    answers = {}
    for label, limit in (("one_item", 1), ("all_items", None)):
        request: dict[str, Any] = {
            "TableName": table,
            "IndexName": index,
            "KeyConditionExpression": "#shard = :shard",
            "ExpressionAttributeNames": {"#shard": shard_attribute},
            "ExpressionAttributeValues": {":shard": {"S": "0"}},
            "ReturnConsumedCapacity": "TOTAL",
        }
        if limit is not None:
            request["Limit"] = limit
        response = client.query(**request)
        answers[label] = {
            "items": response["Count"],
            "bytes": sum(item_size(item) for item in response["Items"]),
            "moto_capacity_units": (response.get("ConsumedCapacity") or {}).get("CapacityUnits"),
        }
    answers["size_based"] = answers["one_item"]["moto_capacity_units"] != answers["all_items"]["moto_capacity_units"]
    return answers


# ---------------------------------------------------------------------------- workloads


@dataclass(frozen=True, slots=True)
class Workload:
    """Programs and sessions for one measurement. Counts are exact, so every effect is checked."""

    due_programs: int = 0  # each needs exactly one window on the business date...
    catching_up: int = 0  # ...except these first ones, a period further behind: two windows
    not_due_programs: int = 0
    ended_programs: int = 0
    expired_empty_sessions: int = 0  # empty past the grace period: cleanup deletes them
    recent_empty_sessions: int = 0  # empty, still inside the grace period
    sessions_in_use: int = 0

    @property
    def windows_expected(self) -> int:
        return self.due_programs + min(self.catching_up, self.due_programs)

    @property
    def program_items(self) -> int:
        return self.due_programs + self.not_due_programs + self.ended_programs

    @property
    def session_items(self) -> int:
        return self.expired_empty_sessions + self.recent_empty_sessions + self.sessions_in_use

    @classmethod
    def programs_table(cls, due: int, table_items: int) -> Workload:
        """`due` programs to roll forward among `table_items`; the rest half not due, half ended."""
        rest = max(0, table_items - due)
        return cls(due_programs=due, not_due_programs=rest - rest // 2, ended_programs=rest // 2)

    @classmethod
    def sessions_table(cls, expired: int, table_items: int) -> Workload:
        """`expired` empty sessions to delete among `table_items`; of the rest, 9 in 10 in use."""
        rest = max(0, table_items - expired)
        return cls(expired_empty_sessions=expired, recent_empty_sessions=rest // 10, sessions_in_use=rest - rest // 10)


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a workload's dates fall: the window tick's business date, the cleanup tick's cutoff."""

    business_date: date
    cleanup_tick: datetime
    grace: timedelta

    def programs(self, workload: Workload) -> tuple[list[Program], list[Program]]:
        """(active, ended). Ids are fixed-width, so an item's size does not grow with the table."""
        active: list[Program] = []
        for i in range(workload.due_programs):
            behind = 7 if i < workload.catching_up else 0
            end = self.business_date - timedelta(days=i % 7 + behind)
            active.append(Program(TENANT, f"due-{i:07d}", 7, end))
        for i in range(workload.not_due_programs):
            active.append(Program(TENANT, f"later-{i:07d}", 7, self.business_date + timedelta(days=1 + i % 28)))
        ended = [
            Program(TENANT, f"ended-{i:07d}", 7, self.business_date - timedelta(days=i % 7))
            for i in range(workload.ended_programs)
        ]
        return active, ended

    def sessions(self, workload: Workload) -> tuple[list[SessionRef], list[tuple[SessionRef, int]]]:
        """(empty sessions, sessions in use with their exercise count)."""
        cutoff = self.cleanup_tick - self.grace
        grace_minutes = max(1, int(self.grace.total_seconds() // 60))
        empty = [
            SessionRef(TENANT, f"expired-{i:07d}", cutoff - timedelta(minutes=1 + i % 600))
            for i in range(workload.expired_empty_sessions)
        ]
        empty += [
            SessionRef(TENANT, f"recent-{i:07d}", self.cleanup_tick - timedelta(minutes=i % grace_minutes))
            for i in range(workload.recent_empty_sessions)
        ]
        in_use = [
            (SessionRef(TENANT, f"in-use-{i:07d}", self.cleanup_tick - timedelta(minutes=i % 2880)), 1 + i % 5)
            for i in range(workload.sessions_in_use)
        ]
        return empty, in_use


def empty_session_item(session: SessionRef) -> SessionModel:
    """A session as `DynamoSessionStore.start_sessions` writes it."""
    return SessionModel(
        session.tenant_id,
        session.session_id,
        started_at=session.started_at.strftime(TIME_FORMAT),
        exercise_count=0,
        empty_shard=shard_for(f"{session.tenant_id}#{session.session_id}", EMPTY_INDEX_SHARDS),
    )


def session_in_use_item(session: SessionRef, exercises: int) -> SessionModel:
    """A session after `DynamoSessionStore.log_exercise`: counted, and out of the empty index."""
    return SessionModel(
        session.tenant_id,
        session.session_id,
        started_at=session.started_at.strftime(TIME_FORMAT),
        exercise_count=exercises,
    )


# ---------------------------------------------------------------------------- the harness


class Harness:
    """The template's tables on moto's server and both jobs' functions, for one bench run."""

    def __init__(self, template: Template, endpoint: str) -> None:
        self.template = template
        self.endpoint = endpoint
        self.runtime = LocalLambdaRuntime(template, endpoint)
        self.client = dynamodb_client(endpoint)
        self.functions = {job: template.function_for_job(job).logical_id for job in (WINDOW_JOB, CLEANUP_JOB)}
        window_env = self.runtime.environment(self.functions[WINDOW_JOB])
        cleanup_env = self.runtime.environment(self.functions[CLEANUP_JOB])
        self.window_settings = WindowGenerationSettings.from_env(window_env)
        self.cleanup_settings = SessionCleanupSettings.from_env(cleanup_env)
        kit = KitSettings.from_env(window_env)
        self.bookkeeping_tables = frozenset({kit.idempotency_table, kit.ledger_table})
        self.layout = Layout(
            business_date=business_date_of(WINDOW_TICK, self.window_settings.operating_time_zones),
            cleanup_tick=CLEANUP_TICK,
            grace=self.cleanup_settings.grace,
        )

    def reset_tables(self) -> None:
        delete_tables(self.template, self.endpoint)
        create_tables(self.template, self.endpoint)

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

    def tick(self, job: str, *, attempt: int = 1) -> Tick:
        scheduled = WINDOW_TICK if job == WINDOW_JOB else CLEANUP_TICK
        names = LocalNames()
        arn = f"arn:aws:scheduler:{names.region}:{names.account_id}:schedule/default/{job}"
        return Tick(job, scheduled, arn, attempt, str(uuid.uuid4()), Trigger.SCHEDULE)

    def deliver(self, job: str, tick: Tick) -> Measured:
        """The tick through the function's handler, as Lambda calls it."""
        function_id = self.functions[job]
        with self.runtime.function_environment(function_id):
            event, context = tick.to_event(), self.runtime.context(function_id)
            handler = self.runtime.handler(function_id)
            return measure(lambda: handler(event, context), bookkeeping_tables=self.bookkeeping_tables)

    def call_bare(self, job: str, tick: Tick) -> Measured:
        """The same job function the handler wraps, called without the kit: logic and repository."""
        function_id = self.functions[job]
        with self.runtime.function_environment(function_id):
            bare = getattr(self.runtime.handler(function_id), "__wrapped__", None)
            if bare is None:
                raise BenchError(f"{function_id}'s handler is not a ScheduledJob handler (no __wrapped__)")
            run = JobRun(tick=tick)
            return measure(lambda: bare(run), bookkeeping_tables=self.bookkeeping_tables)

    def time_empty_index_query(self, job: str) -> float:
        """Seconds moto takes to answer, after the tick, the job's index query for one shard: it
        returns nothing (the work is done), yet moto scans every item of the table to find that."""
        if job == WINDOW_JOB:
            table, index = self.window_settings.programs_table, ProgramModel.due_index.Meta.index_name
            shard, range_key, upper = "due_shard", "current_window_end", self.layout.business_date.isoformat()
        else:
            table, index = self.cleanup_settings.sessions_table, SessionModel.empty_index.Meta.index_name
            cutoff = self.layout.cleanup_tick - self.layout.grace
            shard, range_key, upper = "empty_shard", "started_at", cutoff.strftime(TIME_FORMAT)
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
    """How much a tick of the job did: windows created, sessions deleted."""
    return int(summary["windows_created" if job == WINDOW_JOB else "sessions_deleted"])


def expected_effect(job: str, workload: Workload) -> int:
    """How much a first tick of the job must do on the workload."""
    return workload.windows_expected if job == WINDOW_JOB else workload.expired_empty_sessions


def _executed(job: str, measured: Measured, workload: Workload) -> Mapping[str, Any]:
    result = measured.result
    if result.get("outcome") != "executed":
        raise BenchError(f"{job}: expected an executed tick, got {result}")
    summary: Mapping[str, Any] = result["summary"]
    if effect_of(job, summary) != expected_effect(job, workload):
        raise BenchError(f"{job}: the tick did {summary}, the workload needs {expected_effect(job, workload)}")
    return summary


def _same(job: str, what: str, values: Sequence[Any]) -> Any:
    if any(value != values[0] for value in values):
        raise BenchError(f"{job}: {what} differs between identical runs: {values}")
    return values[0]


def _median_ms(measured: Sequence[Measured]) -> float:
    return statistics.median(m.seconds for m in measured) * 1000


# ------------------------------------------------------------------------ 1. kit overhead

OVERHEAD_WORKLOADS: Final = {
    # 2 due programs, one a period behind: 3 windows (the README's example), among 5 others.
    WINDOW_JOB: Workload(due_programs=2, catching_up=1, not_due_programs=3, ended_programs=2),
    CLEANUP_JOB: Workload(expired_empty_sessions=3, recent_empty_sessions=2, sessions_in_use=4),
}


_OVERHEAD_METRICS: Final = {
    "requests": ("DynamoDB requests", "requests"),
    "read_units": ("read units", "RCU"),
    "domain_requests": ("requests to domain tables", "requests"),
    "median_ms": ("median wall time", "ms"),
}


@dataclass(frozen=True, slots=True)
class _OverheadCase:
    job: str
    key: str
    label: str
    baseline_label: str

    def figure(
        self, metric: str, value: float, baseline: float, *, target: str = "", met: bool | None = None
    ) -> Figure:
        what, unit = _OVERHEAD_METRICS[metric]
        return Figure(
            f"overhead.{self.job}.{self.key}.{metric}",
            f"{self.job}: {self.label}, {what}",
            unit,
            value,
            baseline,
            self.baseline_label,
            target=target,
            met=met,
        )


def measure_overhead(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {}
    for job, workload in OVERHEAD_WORKLOADS.items():
        tick = harness.tick(job)
        bare_firsts, kit_firsts = [], []
        for timed in [False] * sizes.warm_up + [True] * sizes.first_deliveries:
            harness.reset_tables()
            harness.seed(workload, in_process=True)
            bare = harness.call_bare(job, tick)
            harness.reset_tables()
            harness.seed(workload, in_process=True)
            kit = harness.deliver(job, tick)
            if timed:
                bare_firsts.append(bare)
                kit_firsts.append(kit)
        for bare, kit in zip(bare_firsts, kit_firsts, strict=True):
            if dict(bare.result) != dict(_executed(job, kit, workload)):
                raise BenchError(f"{job}: bare and kit runs did different work: {bare.result} != {kit.result}")
        # Duplicates of the tick the last kit delivery completed; the baseline is the bare
        # function delivered again on the same state (what a job without the kit pays).
        duplicates, redeliveries = [], []
        for _ in range(sizes.duplicates):
            duplicates.append(harness.deliver(job, harness.tick(job, attempt=2)))
            redeliveries.append(harness.call_bare(job, tick))
        if any(d.result.get("outcome") != "duplicate" for d in duplicates):
            raise BenchError(f"{job}: a duplicate delivery was not suppressed: {duplicates[-1].result}")

        bare_ops = _same(job, "bare first-delivery requests", [m.operations for m in bare_firsts])
        kit_ops = _same(job, "first-delivery requests", [m.operations for m in kit_firsts])
        duplicate_ops = _same(job, "duplicate requests", [m.operations for m in duplicates])
        redelivery_ops = _same(job, "bare redelivery requests", [m.operations for m in redeliveries])
        bare, kit, duplicate, redelivery = bare_firsts[-1], kit_firsts[-1], duplicates[-1], redeliveries[-1]
        added = kit.requests - bare.requests
        first = _OverheadCase(job, "first_delivery", "first delivery", "same function without the kit")
        again = _OverheadCase(job, "duplicate", "duplicate delivery", "function without the kit, delivered again")
        figures += [
            first.figure(
                "requests",
                kit.requests,
                bare.requests,
                target=f"≤ baseline + {KIT_ADDED_REQUESTS_TARGET}",
                met=added <= KIT_ADDED_REQUESTS_TARGET,
            ),
            first.figure("read_units", kit.read_units, bare.read_units),
            first.figure("median_ms", _median_ms(kit_firsts), _median_ms(bare_firsts)),
            again.figure(
                "requests", duplicate.requests, redelivery.requests, target="= 1", met=duplicate.requests == 1
            ),
            again.figure(
                "domain_requests",
                duplicate.domain_requests,
                redelivery.domain_requests,
                target="= 0",
                met=duplicate.domain_requests == 0,
            ),
            again.figure("median_ms", _median_ms(duplicates), _median_ms(redeliveries)),
        ]
        details[job] = {
            "workload": _workload_dict(workload),
            "summary": dict(bare.result),
            "operations": {
                "bare_first_delivery": bare_ops,
                "kit_first_delivery": kit_ops,
                "kit_added": dict(sorted((Counter(kit_ops) - Counter(bare_ops)).items())),
                "kit_duplicate": duplicate_ops,
                "bare_redelivery": redelivery_ops,
            },
            "duplicate_tables": sorted(duplicate.tables),
            "first_deliveries_timed": len(kit_firsts),
            "duplicates_timed": len(duplicates),
        }
    return figures, details


def _workload_dict(workload: Workload) -> dict[str, int]:
    return {name: getattr(workload, name) for name in Workload.__dataclass_fields__}


# -------------------------------------------------------------------------------- 2. scale


def measure_scale(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    details: dict[str, Any] = {}
    harness.check_in_process_items_match_the_repositories()
    for job in (WINDOW_JOB, CLEANUP_JOB):
        rows: list[dict[str, Any]] = []
        for table_items in sizes.scale_table_items:
            workload = (
                Workload.programs_table(sizes.scale_work, table_items)
                if job == WINDOW_JOB
                else Workload.sessions_table(sizes.scale_work, table_items)
            )
            harness.reset_tables()
            seed_seconds = harness.seed(workload, in_process=True)
            measured = harness.deliver(job, harness.tick(job))
            _executed(job, measured, workload)
            rows.append(
                {
                    "table_items": table_items,
                    "work": expected_effect(job, workload),
                    "requests": measured.requests,
                    "operations": dict(measured.operations),
                    "read_units": measured.read_units,
                    "wall_ms": round(measured.seconds * 1000, 1),
                    "moto_empty_index_query_ms": round(harness.time_empty_index_query(job) * 1000, 1),
                    "seed_seconds": round(seed_seconds, 2),
                }
            )
        if job == WINDOW_JOB:
            details["moto_consumed_capacity"] = moto_capacity_is_size_based(
                harness.client,
                harness.window_settings.programs_table,
                ProgramModel.due_index.Meta.index_name,
                "due_shard",
            )
        smallest, largest = rows[0], rows[-1]
        span = f"{largest['table_items']:,} vs {smallest['table_items']:,} items"
        for metric, unit in (("requests", "requests"), ("read_units", "RCU")):
            ratio = largest[metric] / smallest[metric]
            figures.append(
                Figure(
                    f"scale.{job}.{metric}_per_tick",
                    f"{job}: {metric.replace('_', ' ')} per tick, {span}",
                    unit,
                    largest[metric],
                    smallest[metric],
                    f"same work, {smallest['table_items']:,} items",
                    target=f"ratio ≤ {SCALE_RATIO_TARGET}",
                    met=ratio <= SCALE_RATIO_TARGET,
                )
            )
        figures.append(
            Figure(
                f"scale.{job}.wall_ms_per_tick",
                f"{job}: wall time per tick on moto, {span}",
                "ms",
                largest["wall_ms"],
                smallest["wall_ms"],
                f"same work, {smallest['table_items']:,} items",
            )
        )
        details[job] = {"work_per_tick": sizes.scale_work, "sizes": rows}
    details["seeded"] = "straight into moto's state in this process; each tick over HTTP"
    return figures, details


# --------------------------------------------------------------------------- 3. throughput


def naive_window_generation(
    client: Any, programs_table: str, windows_table: str, *, business_date: date, tick_key: str
) -> int:
    """What a newcomer writes: scan for due programs, then for each window check that it does not
    exist, put it and move the program on. No transaction and no conditions, so a crash between
    the put and the update, or two deliveries at once, leave the tables inconsistent."""
    created = 0
    pages = client.get_paginator("scan").paginate(
        TableName=programs_table,
        FilterExpression="#status = :active AND current_window_end <= :date",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":active": {"S": "ACTIVE"}, ":date": {"S": business_date.isoformat()}},
    )
    for page in pages:
        for program in page["Items"]:
            tenant, program_id = program["tenant_id"]["S"], program["program_id"]["S"]
            length = timedelta(days=int(program["window_length_days"]["N"]))
            end = date.fromisoformat(program["current_window_end"]["S"])
            while end <= business_date:
                key = {"program_key": {"S": f"{tenant}#{program_id}"}, "start_date": {"S": end.isoformat()}}
                if "Item" not in client.get_item(TableName=windows_table, Key=key):
                    window = {
                        **key,
                        "tenant_id": {"S": tenant},
                        "program_id": {"S": program_id},
                        "end_date": {"S": (end + length).isoformat()},
                        "created_for_tick": {"S": tick_key},
                    }
                    client.put_item(TableName=windows_table, Item=window)
                    created += 1
                end += length
                client.update_item(
                    TableName=programs_table,
                    Key={"tenant_id": {"S": tenant}, "program_id": {"S": program_id}},
                    UpdateExpression="SET current_window_end = :end",
                    ExpressionAttributeValues={":end": {"S": end.isoformat()}},
                )
    return created


def measure_throughput(harness: Harness, sizes: BenchSizes) -> tuple[list[Figure], dict[str, Any]]:
    workload = Workload(due_programs=sizes.throughput_programs)
    settings = harness.window_settings
    harness.reset_tables()
    harness.seed(workload, in_process=True)
    tick = harness.tick(WINDOW_JOB)
    built = harness.deliver(WINDOW_JOB, tick)
    built_windows = effect_of(WINDOW_JOB, _executed(WINDOW_JOB, built, workload))
    built_stored = harness.count_items(settings.windows_table)

    harness.reset_tables()
    harness.seed(workload, in_process=True)
    naive = measure(
        lambda: naive_window_generation(
            harness.client,
            settings.programs_table,
            settings.windows_table,
            business_date=harness.layout.business_date,
            tick_key=tick.key,
        )
    )
    naive_stored = harness.count_items(settings.windows_table)
    if not built_windows == built_stored == naive.result == naive_stored == workload.windows_expected:
        raise BenchError(
            f"throughput: windows created differ (built {built_windows}/{built_stored}, "
            f"naive {naive.result}/{naive_stored}, expected {workload.windows_expected})"
        )
    windows = workload.windows_expected
    figures = [
        Figure(
            f"throughput.{WINDOW_JOB}.windows_per_second",
            f"{WINDOW_JOB}: windows per second, {sizes.throughput_programs:,} due programs",
            "windows/s",
            windows / built.seconds,
            windows / naive.seconds,
            "naive loop: scan, get, put, update",
        ),
        Figure(
            f"throughput.{WINDOW_JOB}.requests_per_window",
            f"{WINDOW_JOB}: DynamoDB requests per window",
            "requests",
            built.requests / windows,
            naive.requests / windows,
            "naive loop: scan, get, put, update",
        ),
    ]
    details = {
        "due_programs": sizes.throughput_programs,
        "windows": windows,
        "built": {"seconds": round(built.seconds, 2), "operations": dict(built.operations)},
        "naive": {"seconds": round(naive.seconds, 2), "operations": dict(naive.operations)},
    }
    return figures, details


# ------------------------------------------------------------------------------------ run


def environment_facts(sizes: BenchSizes) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "moto": importlib.metadata.version("moto"),
        "botocore": importlib.metadata.version("botocore"),
        "dynamodb": "moto's server in the bench process, over loopback HTTP",
        "moto_transactions": "snapshot only the items a transaction names (bench patch; see bench.py)",
        "sizes": {name: getattr(sizes, name) for name in BenchSizes.__dataclass_fields__},
    }


def run_bench(
    template: Template,
    *,
    sizes: BenchSizes = FULL,
    endpoint: str | None = None,
    sam: Path | None = None,
    work_dir: Path | None = None,
    function_output: TextIO | None = None,
    progress: Callable[[str], None] = lambda _message: None,
) -> BenchResults:
    """Every measurement, in one process. `endpoint` reuses a running in-process moto server."""
    results = BenchResults(environment=environment_facts(sizes))
    started = time.perf_counter()
    redirect = contextlib.redirect_stdout(function_output) if function_output else contextlib.nullcontext()
    server = contextlib.nullcontext(None) if endpoint else EmbeddedDynamoDB()
    with redirect, server as db, moto_transactions_snapshot_touched_items():
        endpoint = endpoint or db.endpoint  # type: ignore[union-attr]
        harness = Harness(template, endpoint)
        try:
            progress("1/5 kit overhead per tick")
            results.add("overhead", *measure_overhead(harness, sizes))
            progress(
                f"2/5 cost per tick as the table grows: {', '.join(f'{n:,}' for n in sizes.scale_table_items)} items"
            )
            results.add("scale", *measure_scale(harness, sizes))
            progress(f"3/5 throughput at {sizes.throughput_programs:,} due programs, built and naive")
            results.add("throughput", *measure_throughput(harness, sizes))
            # bench_build imports this module, so it is imported here, not at the top.
            from clockless_tools.bench.cold_start import measure_artifacts, measure_cold_start, source_setup

            setups = [source_setup(template)]
            if sizes.sam_build and sam is not None and sam.exists():
                progress("4/5 sam build, the layer without what the runtime ships, a tick on each")
                work = (work_dir or template.root / "bench" / "work.tmp").resolve()
                figures, details, built_setups = measure_artifacts(harness, sam.resolve(), work, sizes)
                results.add("artifacts", figures, details)
                setups += built_setups
            else:
                reason = "SAM CLI not found (make bench installs it)" if sizes.sam_build else "not asked for"
                results.add("artifacts", [], {"skipped": reason})
            progress(f"5/5 cold start: each handler imported {sizes.imports} times per setup")
            environments = {logical_id: harness.runtime.environment(logical_id) for logical_id in template.functions}
            results.add("cold_start", *measure_cold_start(template, setups, sizes, environments))
        finally:
            with contextlib.suppress(Exception):
                delete_tables(template, endpoint)
    results.environment["seconds"] = round(time.perf_counter() - started, 1)
    return results
