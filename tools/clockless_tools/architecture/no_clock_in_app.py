"""Rule `no-clock-in-app`: EventBridge Scheduler owns time; deployed code never schedules itself."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.code import (
    imported_modules,
    module_imports,
    qualified_name,
    walk_without_nested_scopes,
)
from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation, per_file

NO_CLOCK_IN_APP: Final = "no-clock-in-app"

# Top-level modules whose only purpose is firing code on a timetable inside the process.
_SCHEDULER_MODULES: Final = {
    "sched": "the standard library scheduler",
    "apscheduler": "APScheduler",
    "schedule": "the schedule library",
    "croniter": "croniter (cron iteration at run time)",
    "aws_croniter": "aws-croniter (cron iteration at run time)",
    "cronsim": "cronsim (cron iteration at run time)",
    "crontab": "crontab (cron iteration at run time)",
    "pycron": "pycron",
    "timeloop": "timeloop",
    "rocketry": "Rocketry",
}
_TIMERS: Final = {
    "threading.Timer": "threading.Timer",
    "signal.alarm": "signal.alarm",
    "signal.setitimer": "signal.setitimer",
}
_SLEEPS: Final = {"time.sleep", "asyncio.sleep", "trio.sleep", "anyio.sleep"}
# Event-loop methods that fire a callback later or keep a loop running to do so.
_LOOP_TIMERS: Final = {"call_later", "call_at", "run_forever"}
_ENDLESS_ITERATORS: Final = {"itertools.count", "itertools.cycle", "itertools.repeat"}

_FIX: Final = "delete it: add a ScheduleV2 event in template.yaml and let the scheduler invoke the job"


def check_no_clock_in_app(project: Project) -> Iterator[Violation]:
    for source in project.sources:
        yield from _check_source(source)


@per_file
def _check_source(source: SourceFile) -> Iterator[Violation]:
    def violation(message: str, line: int) -> Violation:
        return Violation(NO_CLOCK_IN_APP, source.relative, source.owner, message, _FIX, line=line)

    for module, line in imported_modules(source.tree):
        top = module.split(".", 1)[0]
        if top in _SCHEDULER_MODULES:
            yield violation(f"{source.module} imports {module}: {_SCHEDULER_MODULES[top]} is a clock in the app", line)
    imports = module_imports(source.tree)
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Attribute | ast.Name):
            name = qualified_name(node, imports)
            if name in _TIMERS:
                yield violation(
                    f"{source.module} uses {_TIMERS[name]}: a timer in the app fires code on its own", node.lineno
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _LOOP_TIMERS:
            yield violation(
                f"{source.module} calls .{node.func.attr}(): an event loop timer is a clock in the app", node.lineno
            )
        if isinstance(node, ast.While | ast.For | ast.AsyncFor) and _loops_on(node, imports):
            sleep = _sleep_in(node, imports)
            if sleep is not None:
                name, line = sleep
                yield violation(
                    f"{source.module} calls {name} inside a loop (line {node.lineno}): "
                    "a sleep-and-loop is a clock in the app",
                    line,
                )


def _loops_on(loop: ast.While | ast.For | ast.AsyncFor, imports: dict[str, str]) -> bool:
    """A while loop, or a for loop over an endless iterator."""
    if isinstance(loop, ast.While):
        return True
    return isinstance(loop.iter, ast.Call) and qualified_name(loop.iter.func, imports) in _ENDLESS_ITERATORS


def _sleep_in(loop: ast.While | ast.For | ast.AsyncFor, imports: dict[str, str]) -> tuple[str, int] | None:
    for node in walk_without_nested_scopes(loop.body):
        if isinstance(node, ast.Call):
            name = qualified_name(node.func, imports)
            if name in _SLEEPS:
                return name, node.lineno
    return None


NO_CLOCK_IN_APP_RULE = Rule(
    NO_CLOCK_IN_APP,
    "no in-process scheduling in functions/ or layers/ (sched, timers, schedulers, cron iteration, sleep loops)",
    check_no_clock_in_app,
)
