"""Rule duration-bound: a job that slowly approaches its timeout is seen before it fails.

Each scheduled function and each worker declares how long a run is expected to take
(`Metadata: clockless: expected_duration_seconds`), below its `Timeout`, and has a p99 (or
higher percentile) `Duration` alarm at or under that bound.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.failure_paths import function_alarms, literal_int
from clockless_tools.architecture.job_bounds import read_expected_duration
from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.loader import TemplateError

DURATION_BOUND: Final = "duration-bound"
_PERCENTILE = re.compile(r"^p(\d{2}(\.\d+)?)$")


def check_duration_bound(project: Project) -> Iterator[Violation]:
    template = project.template
    for logical_id, fn in {**template.scheduled_functions, **template.worker_functions}.items():

        def violation(message: str, fix: str, resource: str = logical_id) -> Violation:
            return Violation(DURATION_BOUND, project.template_file, resource, message, fix)

        try:
            bound_ms = int(read_expected_duration(fn).total_seconds() * 1000)
        except TemplateError as error:
            yield violation(str(error), "declare Metadata.clockless.expected_duration_seconds")
            continue
        timeout_ms = fn.timeout * 1000
        if bound_ms >= timeout_ms:
            yield violation(
                f"expected_duration_seconds {bound_ms // 1000} is not below the Timeout {fn.timeout} s: the alarm "
                "would only speak once runs already fail",
                f"declare an expected duration below {fn.timeout} s, or raise the Timeout",
            )
            # The alarm is judged against a bound below the Timeout: with this one, the fix above is the
            # only one (a declared job's loop writes the alarm's Threshold from the same key).
            continue
        alarms = function_alarms(template, logical_id, "Duration")
        fitting = [
            props
            for props in alarms
            if _PERCENTILE.match(str(props.get("ExtendedStatistic")))
            and float(_PERCENTILE.match(str(props["ExtendedStatistic"])).group(1)) >= 90  # type: ignore[union-attr]
            and props.get("ComparisonOperator") == "GreaterThanThreshold"
            and (literal_int(props.get("Threshold")) or timeout_ms + 1) <= min(bound_ms, timeout_ms - 1)
            and props.get("AlarmActions")
        ]
        if not fitting:
            found = ", ".join(f"{p.get('ExtendedStatistic')} > {p.get('Threshold')}" for p in alarms) or "none"
            yield violation(
                f"no AWS/Lambda Duration alarm at p90 or above with a Threshold at most the expected {bound_ms} ms "
                f"(Timeout {timeout_ms} ms) and AlarmActions; found: {found}",
                f"add a Duration alarm: ExtendedStatistic p99, GreaterThanThreshold, Threshold {bound_ms}",
            )


DURATION_BOUND_RULE = Rule(
    DURATION_BOUND,
    "each scheduled function and worker declares an expected duration below its Timeout and has a p99 Duration "
    "alarm at it",
    check_duration_bound,
)
