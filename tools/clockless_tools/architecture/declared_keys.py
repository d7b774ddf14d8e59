"""Fix hints in the words of a job's declaration: the `Mappings: Jobs: <Id>:` key the user edits and
the value that passes, beside the written-out property the rule read.

The rules read the template as CloudFormation deploys it (the loops written out), so their fixes
name the resources' properties (`Period: 300, EvaluationPeriods: 29`, `MaximumEventAgeInSeconds`).
A job declared in `Mappings: Jobs:` does not write those: the loop does, from one key each. `check`
passes every violation through `in_declaration_terms`, which, for a resource the loops write for a
declared job, says the key first and keeps the rule's own words after it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from typing import Final

from clockless_tools.architecture.project import Violation
from clockless_tools.template.model import Template

_JOBS: Final = "Jobs"


def _dead_man(match: re.Match[str]) -> str:
    return f"DeadManPeriodSeconds: {match[1]}, DeadManPeriods: {match[2]}"


def _grace(match: re.Match[str]) -> str:
    return f"GraceMinutes: {5 * math.ceil(int(match[1]) / 5)} (at least {match[1]})"


def _scheduler_age(match: re.Match[str]) -> str:
    below = int(match[1])
    return f"SchedulerMaxEventAgeSeconds: {max(60, (below - 1) // 60 * 60)} (below {below})"


def _expiry(match: re.Match[str]) -> str:
    return f'IdempotencyExpirySeconds: "{match[1]}" (or more)'


def _expected_duration(match: re.Match[str]) -> str:
    return f"ExpectedDurationSeconds: {max(1, int(match[1]) // 2)} (below {match[1]})"


def _shards(match: re.Match[str]) -> str:
    return f"Shards: {match[1]} (the loop writes MaximumConcurrency and the job's page from it)"


def _datapoints(match: re.Match[str]) -> str:
    return f"DeadManPeriods: {match[1]} (the loop writes EvaluationPeriods and DatapointsToAlarm from it)"


def _retries(match: re.Match[str]) -> str:
    return f"SchedulerRetries: {match[1]} ({match[2]})"


def _scheduler_age_floor(match: re.Match[str]) -> str:
    return f"SchedulerMaxEventAgeSeconds: {match[1]} (or more)"


def _lambda_age(match: re.Match[str]) -> str:
    return f"LambdaMaxEventAgeSeconds: {match[1]} ({match[2]})"


def _schedule(match: re.Match[str]) -> str:
    return f"Schedule: {match[1]} ({match[2]}; or a LocalTimeRule this schedule keeps)"


# A rule's fix (as it words it for the written-out resource) -> the declaration key and value.
_TRANSLATIONS: Final[tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...]] = (
    (re.compile(r"^Period: (\d+), EvaluationPeriods: (\d+), DatapointsToAlarm: \d+$"), _dead_man),
    (re.compile(r"^raise grace_minutes to at least (\d+)$"), _grace),
    (re.compile(r"^lower MaximumEventAgeInSeconds below (\d+)$"), _scheduler_age),
    (re.compile(r'^raise IDEMPOTENCY_EXPIRY_SECONDS to at least "(\d+)"$'), _expiry),
    (re.compile(r"^declare an expected duration below (\d+) s, or raise the Timeout$"), _expected_duration),
    (re.compile(r"^set DatapointsToAlarm: (\d+)$"), _datapoints),
    (re.compile(r"^ScalingConfig: \{MaximumConcurrency: (\d+)\} \(or change the shard count\)$"), _shards),
    (re.compile(r"^set MaximumRetryAttempts: (\d+) \((Scheduler's range: \d+-\d+)\)$"), _retries),
    (re.compile(r"^raise MaximumEventAgeInSeconds to (\d+)$"), _scheduler_age_floor),
    (re.compile(r"^set EventInvokeConfig.MaximumEventAgeInSeconds: (\d+) \((Lambda's range: \d+-\d+)\)$"), _lambda_age),
    (re.compile(r"^ScheduleExpression: (cron\(.+\)) \((.+)\), or a local-time rule this schedule keeps$"), _schedule),
)


def declared_job_of(resource: str, jobs: Mapping[str, object]) -> str | None:
    """The declared job id whose loop writes `resource` (`OrderSweepDeadManAlarm` -> `OrderSweep`)."""
    stems = [stem for stem in jobs if resource.startswith(stem) and resource != stem]
    return max(stems, key=len) if stems else None


def in_declaration_terms(violation: Violation, template: Template) -> Violation:
    """The violation with its fix naming the declaration key, when a loop wrote the resource."""
    mappings = template.document.get("Mappings") or {}
    jobs = mappings.get(_JOBS) if isinstance(mappings, Mapping) else None
    if not isinstance(jobs, Mapping):
        return violation
    stem = declared_job_of(violation.resource, jobs)
    if stem is None:
        return violation
    for pattern, key in _TRANSLATIONS:
        match = pattern.match(violation.fix)
        if match:
            fix = f"set Mappings.{_JOBS}.{stem}.{key(match)} in template.yaml (written out: {violation.fix})"
            return dataclasses.replace(violation, fix=fix)
    return violation
