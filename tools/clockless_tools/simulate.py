"""`clockless simulate`: every schedule in template.yaml replayed over a time range in simulated
time, each tick delivered at least once the way production does it, and judged by its effects.

Two replays, each in its own process (see `clockless_tools.replay` for why):

1. the simulation: the seeded tables (or an already running DynamoDB), every tick delivered by
   the seeded plan in `clockless_tools.delivery` (duplicates, concurrent copies, failures and
   retries, late deliveries);
2. the reference: a fresh copy of the same seeded tables, each tick delivered exactly once, at
   the simulated time and in the order its work was done in the simulation.

The final tables of the two are compared item by item, bookkeeping tables (Metadata
`clockless: {kind: idempotency | ledger}`) aside. Any difference is an effect the extra
deliveries duplicated or lost; the kit's own counters are reported but never trusted for that.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from clockless import OUTCOME_EXECUTED, format_scheduled_time
from clockless_tools.delivery import (
    KINDS,
    OUTCOME_FAILED,
    SUPPRESSED,
    TOOK_EFFECT,
    DeliveryRecord,
    TickPlan,
    delivered_once,
    plan_deliveries,
)
from clockless_tools.schedule import ScheduleExpressionError, ticks_between
from clockless_tools.seed import SeedPlan
from clockless_tools.snapshot import ItemDifference, Snapshot, TableEffects, compare_table, effects_between
from clockless_tools.template import PROJECT_ROOT, LocalNames, Template, TemplateError

BOOKKEEPING_KINDS: Final = frozenset({"idempotency", "ledger"})
DEFAULT_LOG: Final = PROJECT_ROOT / ".clockless" / "simulate-function-output.log"
Progress = Callable[[str, int, int], None]
Note = Callable[[str], None]


class SimulationInputError(ValueError):
    """Bad input (range, --drop, template): nothing was run."""


class SimulationError(RuntimeError):
    """A replay process broke down (not a finding about the jobs): the message says where."""


def parse_utc(text: str, *, option: str) -> datetime:
    """An ISO-8601 instant that names its zone (`Z` or an offset), in UTC, whole seconds."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SimulationInputError(f"{option} {text!r} is not an ISO-8601 time (e.g. 2026-11-27T00:00:00Z)") from None
    if moment.tzinfo is None:
        raise SimulationInputError(f"{option} {text!r} names no time zone: write it in UTC, e.g. {text.strip()}Z")
    return moment.astimezone(UTC).replace(microsecond=0)


def parse_drop(text: str) -> tuple[str, datetime]:
    """`JOB@UTC_TIME`: that tick is never delivered."""
    job, separator, moment = text.partition("@")
    if not separator or not job.strip():
        raise SimulationInputError(f"--drop {text!r} must be JOB@UTC_TIME, e.g. session-cleanup@2026-11-28T03:00:00Z")
    return job.strip(), parse_utc(moment, option=f"--drop {job.strip()}@")


def check_endpoint(url: str) -> str:
    """`--endpoint` must be an http(s) URL something listens on; checked before anything runs."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SimulationInputError(f"--endpoint {url!r} is not an http(s) URL, e.g. http://127.0.0.1:8765")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=2).close()
    except OSError as error:
        raise SimulationInputError(
            f"--endpoint {url}: nothing answers ({error.strerror or error}); start it with `clockless local up`"
        ) from None
    return url.rstrip("/")


def bookkeeping_tables(template: Template) -> set[str]:
    """Logical ids of tables the kit keeps for itself (idempotency records, the run ledger)."""
    return set(template.tables_of_kind(*BOOKKEEPING_KINDS))


def job_tables(template: Template, function_id: str) -> list[str]:
    """The domain tables a function's environment names (`!Ref <Table>`): where its effects land."""
    domain = template.tables.keys() - bookkeeping_tables(template)
    found = []
    for value in template.function(function_id).environment.values():
        if isinstance(value, Mapping) and value.get("Ref") in domain and value["Ref"] not in found:
            found.append(value["Ref"])
    return found


def key_attributes(template: Template, logical_id: str) -> list[str]:
    schema = template.tables[logical_id].get("KeySchema") or []
    ordered = sorted(schema, key=lambda element: element.get("KeyType") != "HASH")
    return [str(element["AttributeName"]) for element in ordered]


def expected_ticks(template: Template, start: datetime, end: datetime) -> dict[str, list[datetime]]:
    ticks = {}
    for job, schedule in template.jobs.items():
        try:
            ticks[job] = ticks_between(schedule.expression, start, end)
        except ScheduleExpressionError as error:
            raise SimulationInputError(f"{schedule.function_id}.Events.{schedule.event_id}: {error}") from None
    return ticks


@dataclass(frozen=True)
class SimulationRequest:
    template: Template
    start: datetime
    end: datetime
    seed: int = 7
    drops: tuple[tuple[str, datetime], ...] = ()
    endpoint: str | None = None
    seed_plan: SeedPlan = SeedPlan()
    log_path: Path = DEFAULT_LOG

    def validate(self) -> dict[str, list[datetime]]:
        if self.start >= self.end:
            raise SimulationInputError(
                f"--from {format_scheduled_time(self.start)} is not before --to {format_scheduled_time(self.end)}"
            )
        ticks = expected_ticks(self.template, self.start, self.end)
        if not ticks:
            raise SimulationInputError(f"{self.template.path} declares no schedules (ScheduleV2 events)")
        for job, moment in self.drops:
            if job not in ticks:
                known = ", ".join(ticks)
                raise SimulationInputError(f"--drop {job}@...: unknown job (the template schedules: {known})")
            if moment not in ticks[job]:
                raise SimulationInputError(
                    f"--drop {job}@{format_scheduled_time(moment)}: not a tick of {job} "
                    f"({self.template.jobs[job].expression}) between --from and --to"
                )
        return ticks


@dataclass
class JobReport:
    job: str
    function_id: str
    expression: str
    tables: list[str]
    ticks_expected: int = 0
    ticks_dropped: list[str] = field(default_factory=list)
    deliveries: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    executions: int = 0
    duplicates_suppressed: int = 0
    failures: int = 0
    failures_injected: int = 0
    failures_after_writes: int = 0
    failures_retried: int = 0
    responses_lost: int = 0
    ticks_missed: list[str] = field(default_factory=list)
    effects: dict[str, TableEffects] = field(default_factory=dict)
    reference_effects: dict[str, TableEffects] = field(default_factory=dict)
    differences: list[ItemDifference] = field(default_factory=list)
    reference_failures: list[str] = field(default_factory=list)

    @property
    def ticks_delivered(self) -> int:
        return self.ticks_expected - len(self.ticks_dropped)

    @property
    def effects_total(self) -> int:
        return sum(effects.total for effects in self.effects.values())

    @property
    def reference_effects_total(self) -> int:
        return sum(effects.total for effects in self.reference_effects.values())

    @property
    def exactly_once(self) -> bool:
        return not self.ticks_missed and not self.differences and not self.reference_failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "function": self.function_id,
            "schedule": self.expression,
            "tables": self.tables,
            "ticks_expected": self.ticks_expected,
            "ticks_dropped": self.ticks_dropped,
            "deliveries": self.deliveries,
            "deliveries_by_kind": self.by_kind,
            "executions": self.executions,
            "duplicates_suppressed": self.duplicates_suppressed,
            "failures": self.failures,
            "failures_injected": self.failures_injected,
            "failures_after_writes": self.failures_after_writes,
            "failures_retried": self.failures_retried,
            "responses_lost": self.responses_lost,
            "ticks_missed": self.ticks_missed,
            "effects": {table: asdict(effects) for table, effects in self.effects.items()},
            "reference_effects": {table: asdict(effects) for table, effects in self.reference_effects.items()},
            "differences": [difference.as_dict() for difference in self.differences],
            "reference_failures": self.reference_failures,
            "exactly_once": self.exactly_once,
        }


@dataclass
class SimulationReport:
    start: datetime
    end: datetime
    seed: int
    endpoint: str | None
    seeded: str | None
    jobs: list[JobReport]
    compared_tables: list[str]
    differences: list[ItemDifference]

    @property
    def ok(self) -> bool:
        return not self.differences and all(job.exactly_once for job in self.jobs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": format_scheduled_time(self.start),
            "to": format_scheduled_time(self.end),
            "seed": self.seed,
            "endpoint": self.endpoint,
            "seeded": self.seeded,
            "compared_tables": self.compared_tables,
            "jobs": [job.as_dict() for job in self.jobs],
            "differences": [difference.as_dict() for difference in self.differences],
            "ok": self.ok,
        }


class _Replay:
    """A replay process: SPEC in a file, commands on stdin, JSON lines on stdout, result in a file."""

    def __init__(self, name: str, spec: dict[str, Any], workdir: Path) -> None:
        self.name = name
        spec_path, self.out_path, self.err_path = (workdir / f"{name}.{s}" for s in ("spec.json", "out.json", "err"))
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        with self.err_path.open("w", encoding="utf-8") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "clockless_tools.replay", str(spec_path), str(self.out_path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )

    def messages(self) -> Iterator[dict[str, Any]]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            yield json.loads(line)

    def command(self, **command: Any) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it stopped; result() reports why

    def result(self) -> dict[str, Any]:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        code = self.process.wait()
        if code != 0:
            tail = self.err_path.read_text(encoding="utf-8").strip().splitlines()[-12:]
            raise SimulationError(f"the {self.name} replay stopped with exit code {code}:\n" + "\n".join(tail))
        return json.loads(self.out_path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _follow(replay: _Replay, progress: Progress, note: Note) -> None:
    for message in replay.messages():
        if "note" in message:
            note(f"{replay.name}: {message['note']}")
        elif "done" in message:
            progress(replay.name, int(message["done"]), int(message["total"]))


def run_simulation(
    request: SimulationRequest,
    *,
    progress: Progress = lambda _name, _done, _total: None,
    note: Note = lambda _message: None,
) -> SimulationReport:
    """Run the simulation and, alongside it, the reference replay; compare their tables; report per job."""
    template = request.template
    ticks = request.validate()
    names = LocalNames()
    plans = plan_deliveries(template, ticks, seed=request.seed, dropped=set(request.drops))
    by_key = {plan.key: plan for plan in plans}
    for log in (request.log_path, reference_log(request.log_path)):
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("", encoding="utf-8")
    common = {
        "template": str(template.path),
        "spared_tables": sorted(names.table_name(table) for table in bookkeeping_tables(template)),
    }
    with tempfile.TemporaryDirectory(prefix="clockless-simulate-") as tmp:
        workdir = Path(tmp)
        simulation = _Replay(
            "simulation",
            {
                **common,
                "log": str(request.log_path),
                "endpoint": request.endpoint,
                "seed": None if request.endpoint else _seed_spec(request),
                "before_path": str(workdir / "before.json"),
                "plans": [plan.as_dict() for plan in plans],
            },
            workdir,
        )
        reference = _Replay(
            "reference",
            {**common, "log": str(reference_log(request.log_path)), "stream": True, "expected": len(plans)},
            workdir,
        )
        follower = threading.Thread(target=_follow, args=(reference, progress, note), daemon=True)
        follower.start()
        try:
            forwarded: set[str] = set()
            for message in simulation.messages():
                if "before" in message:
                    reference.command(load=message["before"])
                elif "took_effect" in message:
                    # Each tick once, at the simulated time and in the order its work was first done
                    # in the simulation, so clocks read by the jobs agree.
                    plan = by_key[message["took_effect"]]
                    at = datetime.fromisoformat(message["at"])
                    reference.command(plan=delivered_once(plan, at=at, order=int(message["round"])).as_dict())
                    forwarded.add(plan.key)
                elif "note" in message:
                    note(f"simulation: {message['note']}")
                else:
                    progress("simulation", int(message["done"]), int(message["total"]))
            simulated = simulation.result()
            # Ticks that never took effect in the simulation: the reference still delivers them once.
            for plan in plans:
                if plan.key not in forwarded:
                    reference.command(
                        plan=delivered_once(plan, at=plan.first_at, order=len(plans) + plan.order).as_dict()
                    )
            reference.command(end=True)
            referenced = reference.result()
            follower.join()
        finally:
            simulation.kill()
            reference.kill()
    return build_report(
        request,
        ticks,
        plans,
        [DeliveryRecord(**record) for record in simulated["records"]],
        [DeliveryRecord(**record) for record in referenced["records"]],
        before=simulated["before"],
        after=simulated["after"],
        reference_after=referenced["after"],
        seeded=simulated["seeded"],
    )


def _seed_spec(request: SimulationRequest) -> dict[str, Any]:
    return {
        "plan": asdict(SeedPlan(**{**asdict(request.seed_plan), "seed": request.seed})),
        "business_date": request.start.date().isoformat(),
        "now": request.end.isoformat(),
        # Sessions start across the whole range and the two days before it, so every hourly
        # tick finds sessions whose grace just ended.
        "session_span_seconds": int((request.end - request.start + timedelta(hours=48)).total_seconds()),
    }


def reference_log(log_path: Path) -> Path:
    return log_path.with_name(log_path.stem + "-reference" + log_path.suffix)


def build_report(
    request: SimulationRequest,
    ticks: Mapping[str, list[datetime]],
    plans: list[TickPlan],
    records: list[DeliveryRecord],
    reference_records: list[DeliveryRecord],
    *,
    before: Snapshot,
    after: Snapshot,
    reference_after: Snapshot,
    seeded: str | None,
) -> SimulationReport:
    """Counters per job from the deliveries; effects and differences from the tables."""
    template = request.template
    names = LocalNames()
    compared = sorted(template.tables.keys() - bookkeeping_tables(template))
    differences: dict[str, list[ItemDifference]] = {}
    for table in compared:
        keys = key_attributes(template, table)
        name = names.table_name(table)
        differences[table] = compare_table(name, after.get(name, []), reference_after.get(name, []), keys)
    owned: set[str] = set()
    jobs = []
    for job, times in ticks.items():
        schedule = template.jobs[job]
        tables = job_tables(template, schedule.function_id)
        owned.update(tables)
        report = JobReport(job, schedule.function_id, schedule.expression, tables, ticks_expected=len(times))
        report.ticks_dropped = sorted(format_scheduled_time(t) for j, t in request.drops if j == job)
        _count_deliveries(report, [r for r in records if r.job == job])
        took_effect = {r.tick_key for r in records if r.job == job and r.outcome in TOOK_EFFECT}
        report.ticks_missed = [plan.key for plan in plans if plan.job == job and plan.key not in took_effect]
        report.reference_failures = [
            f"{r.tick_key}: {r.error}" for r in reference_records if r.job == job and r.outcome == OUTCOME_FAILED
        ]
        for table in tables:
            keys, name = key_attributes(template, table), names.table_name(table)
            report.effects[table] = effects_between(before.get(name, []), after.get(name, []), keys)
            report.reference_effects[table] = effects_between(before.get(name, []), reference_after.get(name, []), keys)
            report.differences.extend(differences[table])
        jobs.append(report)
    unowned = [d for table in compared if table not in owned for d in differences[table]]
    return SimulationReport(
        start=request.start,
        end=request.end,
        seed=request.seed,
        endpoint=request.endpoint,
        seeded=seeded,
        jobs=jobs,
        compared_tables=compared,
        differences=unowned,
    )


def _count_deliveries(report: JobReport, records: Collection[DeliveryRecord]) -> None:
    kinds = Counter(record.kind for record in records)
    report.by_kind = {kind: kinds[kind] for kind in KINDS}
    report.deliveries = len(records)
    report.executions = sum(1 for r in records if r.outcome == OUTCOME_EXECUTED)
    report.duplicates_suppressed = sum(1 for r in records if r.outcome in SUPPRESSED)
    report.failures = sum(1 for r in records if r.outcome == OUTCOME_FAILED)
    report.failures_injected = sum(1 for r in records if r.outcome == OUTCOME_FAILED and r.injected)
    report.failures_after_writes = sum(1 for r in records if r.outcome == OUTCOME_FAILED and r.writes_done > 0)
    report.failures_retried = sum(1 for r in records if r.outcome == OUTCOME_FAILED and r.retried)
    report.responses_lost = sum(r.responses_lost for r in records)


def last_whole_hour(now: datetime | None = None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def load_template_for_simulation(path: Path) -> Template:
    try:
        return Template.load(path)
    except TemplateError as error:
        raise SimulationInputError(str(error)) from None
