"""Rule `no-wall-clock`: a job decides from its tick's scheduled time, never from the clock it runs by.

A tick is delivered late, retried, replayed by backfill and delivered twice at once; each must do
exactly what the tick would have done on time. A job that asks the clock (`datetime.now()`,
`time.time()`, ...) decides differently depending on when the delivery happens to run, so the
second delivery of a tick can do something the first did not. The tick carries its time
(`run.tick.scheduled_time`); that is the only "now" a job has.

Why a rule of its own, not part of `no-clock-in-app`: that rule refuses code that *schedules*
itself (timers, sleep loops, cron libraries) anywhere in deployed code; this one refuses *reading*
the time, in a job's own code (its scheduled function's and its workers' packages: handler, logic,
repository, settings, worker, demo seed). The fix differs (use the tick's time, not a
ScheduleV2 event) and so does the scope: the kit reads the clock where time is bookkeeping, never
a decision about the job's data, and each such place is named below with its reason; any other
clock read in the kit is refused too. Monotonic clocks (`time.monotonic`, `time.perf_counter`)
measure durations, not dates, and are not refused. Code that ships in no job (the HTTP trigger,
which refuses ticks from the future) is not a job's decision and is not checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from clockless_tools.architecture.code import module_imports, qualified_name, with_scopes
from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation, per_file

NO_WALL_CLOCK: Final = "no-wall-clock"

# What reads the wall clock, as code names it once imports are resolved.
CLOCK_READERS: Final = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "time.time",
        "time.time_ns",
        "time.localtime",
        "time.gmtime",
        "time.ctime",
        "time.asctime",
        "time.strftime",
        # The kit's own readers: calling them from a job is reading the clock too.
        "clockless.tick.utc_now",
        "clockless.ledger.iso_now",
        "clockless.fanout.records.now_ms",
    }
)

# The kit's named exceptions: where it reads the clock and why that decides nothing about a job's data.
KIT_CLOCK_READS: Final = {
    "clockless.tick.utc_now": "what the HTTP trigger compares a requested tick with, to refuse one from the future",
    "clockless.ledger.iso_now": "ledger timestamps (started_at, finished_at): what an operator reads",
    "clockless.ledger.RunLedger._expires_at": "the ledger record's TTL",
    "clockless.overlap.OverlapGuard.hold": "the TTL of the ledger record of a tick held back by the overlap policy",
    "clockless.persistence.LedgeredPersistenceLayer._claim": "whether an idempotency claim has expired",
    "clockless.fanout.records.now_ms": "leases and heartbeats of partition work records",
    "clockless.fanout.records.PartitionRecords.__post_init__": "the work records' TTL",
    "clockless.fanout.finisher._duration_ms": "the tick's duration metric",
}
# The kit's own readers (CLOCK_READERS under clockless.) are its named exceptions: calling them is
# reading the clock for what they are named for.
_KIT_READERS: Final = frozenset(name for name in CLOCK_READERS if name.startswith("clockless."))

_FIX: Final = "decide from the tick: `run.tick.scheduled_time` (a worker gets it in its params), never the clock"


def check_no_wall_clock(project: Project) -> Iterator[Violation]:
    template = project.template
    jobs = set(template.scheduled_functions) | set(template.worker_functions)
    for source in project.sources:
        if source.owner in jobs:
            for read in _job_reads(source):
                message = (
                    f"{read.where} reads the wall clock ({read.name}): a late or replayed tick would decide differently"
                )
                yield Violation(NO_WALL_CLOCK, source.relative, source.owner, message, _FIX, line=read.line)
        elif source.owner in project.layer_dirs:
            for read in _kit_reads(source):
                if read.where in KIT_CLOCK_READS:
                    continue
                message = (
                    f"{read.where} reads the wall clock ({read.name}), which is none of the kit's named exceptions "
                    "(leases, TTLs, ledger timestamps, metrics)"
                )
                fix = "use the tick's time; or, if it is bookkeeping, name it in KIT_CLOCK_READS with why"
                yield Violation(NO_WALL_CLOCK, source.relative, source.owner, message, fix, line=read.line)


@dataclass(frozen=True, slots=True)
class ClockRead:
    where: str  # module.Class.function the read sits in
    name: str  # what it reads, e.g. datetime.datetime.now
    line: int


@per_file
def _job_reads(source: SourceFile) -> Iterator[ClockRead]:
    return clock_reads(source)


@per_file
def _kit_reads(source: SourceFile) -> Iterator[ClockRead]:
    return clock_reads(source, kit=True)


def clock_reads(source: SourceFile, *, kit: bool = False) -> Iterator[ClockRead]:
    """Every reference to a clock reader in the file (called or passed on); in the kit, not its own readers."""
    imports = module_imports(source.tree)
    for node, scope in with_scopes(source.tree):
        if not isinstance(node, ast.Attribute | ast.Name):
            continue
        name = qualified_name(node, imports)
        if name in CLOCK_READERS and not (kit and name in _KIT_READERS):
            yield ClockRead(".".join([source.module, *scope]), name, node.lineno)


NO_WALL_CLOCK_RULE = Rule(
    NO_WALL_CLOCK,
    "a job's code (handler, logic, repository, worker, demo seed) never reads the wall clock; the kit only where named",
    check_no_wall_clock,
)
