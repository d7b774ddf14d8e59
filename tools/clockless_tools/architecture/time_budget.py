"""Rule `time-budget`: a worker stops with time left to hand its partition on, and its Duration alarm
is set past where it normally stops.

A worker stops paging when less than `WORK_TIME_BUDGET_SECONDS` of its invocation remain: it stores
its cursor, releases its lease and sends a continuation. A budget at or above the `Timeout` (or
missing, or not a literal number) leaves no time to work; a budget of nothing leaves none to hand
on, and the invocation times out in the middle of a page. A worker on a long partition then
normally runs `Timeout - budget` seconds, so its declared `expected_duration_seconds` (the p99
Duration alarm of rule duration-bound) must lie at or above that and below the `Timeout`, or the
alarm fires on every healthy hand-off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from clockless_tools.architecture.job_bounds import DURATION_KEY, METADATA_KEY
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.queues import literal_int

TIME_BUDGET: Final = "time-budget"
BUDGET_VARIABLE: Final = "WORK_TIME_BUDGET_SECONDS"


def check_time_budget(project: Project) -> Iterator[Violation]:
    for logical_id, fn in project.template.worker_functions.items():

        def violation(message: str, fix: str, logical_id: str = logical_id) -> Violation:
            return Violation(TIME_BUDGET, project.template_file, logical_id, message, fix)

        stated = fn.environment.get(BUDGET_VARIABLE)
        budget = literal_int(stated)
        if budget is None or not 1 <= budget < fn.timeout:
            yield violation(
                f"{BUDGET_VARIABLE} is {stated!r} with a Timeout of {fn.timeout} s: state whole seconds from 1 to "
                f"below the Timeout, or the worker times out mid-page instead of handing on a continuation",
                f'{BUDGET_VARIABLE}: "30"',
            )
            continue
        block = fn.metadata.get(METADATA_KEY)
        expected = literal_int(block.get(DURATION_KEY)) if isinstance(block, Mapping) else None
        hand_off = fn.timeout - budget
        if expected is not None and expected < hand_off:
            yield violation(
                f"{DURATION_KEY} is {expected} s, but a worker on a long partition runs until {hand_off} s "
                f"(Timeout {fn.timeout} - {BUDGET_VARIABLE} {budget}): its Duration alarm fires on every hand-off",
                f"{DURATION_KEY}: between {hand_off} and {fn.timeout - 1}",
            )


TIME_BUDGET_RULE = Rule(
    TIME_BUDGET,
    "every worker states WORK_TIME_BUDGET_SECONDS below its Timeout, and expects runs up to Timeout - budget",
    check_time_budget,
)
