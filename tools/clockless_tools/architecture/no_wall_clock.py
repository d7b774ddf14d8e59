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

Any spelling counts: a reader reached through an import alias (`from datetime import datetime as
dt`), a star import, a local alias (`clock = datetime.datetime`, `stamp = time.time`, a subclass
`class Moment(datetime)`), `getattr(datetime, "now")` (or a name computed at run time: refused on
any object a reader hangs off), `operator.attrgetter`/`methodcaller`, `vars(time)["time"]`,
`__import__("time")`, `importlib.import_module("time")` and `sys.modules["time"]`. In a job's code a
method named `now`, `utcnow` or `today` is a clock read on whatever it is called (a datetime
instance's `.now()`, `type(tick_time).utcnow()`, pandas' `Timestamp.now()`, arrow, pendulum).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from clockless_tools.architecture.code import module_imports, with_scopes
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
        "time.clock_gettime",
        "time.clock_gettime_ns",
        # The kit's own readers: calling them from a job is reading the clock too.
        "clockless.tick.utc_now",
        "clockless.ledger.iso_now",
        "clockless.fanout.store.now_ms",
    }
)

# The kit's named exceptions: where it reads the clock and why that decides nothing about a job's data.
KIT_CLOCK_READS: Final = {
    "clockless.tick.utc_now": "what the HTTP trigger compares a requested tick with, to refuse one from the future",
    "clockless.ledger.iso_now": "ledger timestamps (started_at, finished_at): what an operator reads",
    "clockless.ledger.RunLedger._expires_at": "the ledger record's TTL",
    "clockless.overlap.OverlapGuard.hold": "the TTL of the ledger record of a tick held back by the overlap policy",
    "clockless.persistence.TickRecords._claim": "whether an idempotency claim has expired",
    "clockless.fanout.store.now_ms": "leases and heartbeats of partition work records",
    "clockless.fanout.store.PartitionStore.__post_init__": "the work records' TTL",
    "clockless.fanout.finisher._duration_ms": "the tick's duration metric",
}
# The kit's own readers (CLOCK_READERS under clockless.) are its named exceptions: calling them is
# reading the clock for what they are named for.
_KIT_READERS: Final = frozenset(name for name in CLOCK_READERS if name.startswith("clockless."))
# What a reader hangs off (`datetime`, `datetime.datetime`, `time`, ...): an attribute of one picked
# at run time (`getattr(time, name)`) may be any of its readers.
_CLOCK_BEARERS: Final = frozenset(
    name.rsplit(".", depth)[0] for name in CLOCK_READERS for depth in range(1, name.count(".") + 1)
)
# Method names that read the clock on whatever object they are called.
READER_METHODS: Final = frozenset({"now", "utcnow", "today"})
_DYNAMIC: Final = "<computed>"
_ANY_OBJECT: Final = "<object>"

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
    """Every reference to a clock reader in the file (called or passed on), however spelled; in a
    job's code also any `now`/`utcnow`/`today` method; in the kit, not its own readers."""
    names = _Names(source.tree)
    by_line: dict[tuple[str, int], set[str]] = {}
    for node, scope in with_scopes(source.tree):
        if not isinstance(node, ast.Attribute | ast.Name | ast.Call | ast.Subscript) or isinstance(
            getattr(node, "ctx", None), ast.Store
        ):
            continue
        name = names.resolve(node)
        if name is not None and (name in CLOCK_READERS or _picked_at_run_time(name)):
            if not (kit and name in _KIT_READERS):
                by_line.setdefault((".".join([source.module, *scope]), node.lineno), set()).add(name)
        elif not kit and (method := _reader_method(node, names)) is not None:
            by_line.setdefault((".".join([source.module, *scope]), node.lineno), set()).add(method)
    # One read per line, by its most precise name (`datetime.datetime.now` over `<object>.now`).
    for (where, line), found in sorted(by_line.items(), key=lambda item: item[0][1]):
        yield ClockRead(where, min(found, key=lambda name: (name.startswith(_ANY_OBJECT), name)), line)


def _picked_at_run_time(name: str) -> bool:
    """`getattr(time, name)`: any reader of what it is picked from."""
    holder, _, attribute = name.rpartition(".")
    return attribute == _DYNAMIC and holder in _CLOCK_BEARERS


def _reader_method(node: ast.AST, names: _Names) -> str | None:
    """`x.now` on an object of any type; `getattr(x, "now")`; `methodcaller("now")`."""
    if isinstance(node, ast.Attribute) and node.attr in READER_METHODS:
        return f"{names.resolve(node.value) or _ANY_OBJECT}.{node.attr}"
    if isinstance(node, ast.Call):
        called = names.resolve(node.func)
        named = _constant(node.args[1] if called == "builtins.getattr" and len(node.args) > 1 else None)
        if called in {"operator.attrgetter", "operator.methodcaller"} and node.args:
            named = _constant(node.args[0])
        if named in READER_METHODS:
            return f"{_ANY_OBJECT}.{named}"
    return None


def _constant(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Names:
    """What each name and expression of a module stands for: its imports (star imports too), its
    aliases (`clock = datetime.datetime`, a class's first base) and the dynamic spellings."""

    def __init__(self, tree: ast.Module) -> None:
        builtins = {builtin: f"builtins.{builtin}" for builtin in ("getattr", "vars", "__import__")}
        self.names = builtins | module_imports(tree)
        self.star = [
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and any(a.name == "*" for a in node.names)
        ]
        bindings = list(_aliases(tree))
        grown = True
        while grown:  # an alias of an alias; names only grow, so this ends
            grown = False
            for local, value in bindings:
                if local not in self.names and (qualified := self.resolve(value)) is not None:
                    self.names[local] = qualified
                    grown = True

    def resolve(self, node: ast.AST) -> str | None:
        """`dt.now` -> "datetime.datetime.now", `getattr(time, "time")` -> "time.time"; None if unknown."""
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            return next(
                (f"{m}.{node.id}" for m in self.star if f"{m}.{node.id}" in _CLOCK_BEARERS | CLOCK_READERS), None
            )
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _call(self, call: ast.Call) -> str | None:
        called = self.resolve(call.func)
        if called == "builtins.getattr" and len(call.args) >= 2:
            base = self.resolve(call.args[0])
            return None if base is None else f"{base}.{_constant(call.args[1]) or _DYNAMIC}"
        if called in {"builtins.__import__", "importlib.import_module"} and call.args:
            return _constant(call.args[0])
        if isinstance(call.func, ast.Call) and call.args:  # operator.attrgetter("now")(datetime)
            getter = self.resolve(call.func.func)
            if getter in {"operator.attrgetter", "operator.methodcaller"} and call.func.args:
                base = self.resolve(call.args[0]) if getter == "operator.attrgetter" else None
                named = _constant(call.func.args[0]) or _DYNAMIC
                return None if base is None else f"{base}.{named}"
        return None

    def _subscript(self, node: ast.Subscript) -> str | None:
        key = _constant(node.slice)
        holder = node.value
        if self.resolve(holder) == "sys.modules":
            return key
        if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
            base = self.resolve(holder.value)
        elif isinstance(holder, ast.Call) and self.resolve(holder.func) == "builtins.vars" and holder.args:
            base = self.resolve(holder.args[0])
        else:
            return None
        return None if base is None else f"{base}.{key or _DYNAMIC}"


def _aliases(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """(name, what it is bound to) for every plain binding: `x = ...`, `x: T = ...`, `(x := ...)`,
    `a, b = p, q`, and `class X(Base)` (X stands for Base: its class methods are Base's)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from _pairs(target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            yield from _pairs(node.target, node.value)
        elif isinstance(node, ast.ClassDef) and node.bases:
            yield node.name, node.bases[0]


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
        for inner, inner_value in zip(target.elts, value.elts, strict=False):
            yield from _pairs(inner, inner_value)


NO_WALL_CLOCK_RULE = Rule(
    NO_WALL_CLOCK,
    "a job's code (handler, logic, repository, worker, demo seed) never reads the wall clock; the kit only where named",
    check_no_wall_clock,
)
