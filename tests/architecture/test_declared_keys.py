"""A declared job's fix hints name the `Mappings: Jobs: <Id>:` key the user edits, with a value that
passes: planted in the declaration (not the written-out resources), each is caught by its rule, and
the hint's value, put back in the declaration, passes."""

from __future__ import annotations

import re
from pathlib import Path

from clockless_tools.architecture import check
from clockless_tools.architecture.dead_man_alarm import DEAD_MAN_ALARM_RULE
from clockless_tools.architecture.declared_keys import declared_job_of
from clockless_tools.architecture.duration_bound import DURATION_BOUND_RULE
from clockless_tools.architecture.failure_paths import FAILURE_PATHS_RULE
from clockless_tools.architecture.local_time import LOCAL_TIME_RULE
from clockless_tools.architecture.project import Project, Violation
from clockless_tools.architecture.schedule_delivery import SCHEDULE_DELIVERY_RULE
from clockless_tools.architecture.shards_match_concurrency import SHARDS_MATCH_CONCURRENCY_RULE
from tests.conftest import PROJECT_ROOT
from tests.jobs import DAY, HOUR, Job, job_where, project_template

TEMPLATE = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
HOURLY = job_where(period=HOUR)
# A daily job with a local-time rule: its year of ticks is cheap to check.
LOCAL = job_where(period=DAY, local_time_rule=True)
RULES = [DEAD_MAN_ALARM_RULE, SCHEDULE_DELIVERY_RULE]


def _declared(tmp_path: Path, job: Job = HOURLY, /, **keys: int | str) -> Path:
    """template.yaml with the job's declaration given these keys (its own lines for them replaced)."""
    block = f"    {job.stem}:\n"
    start = TEMPLATE.index(block, TEMPLATE.index("  Jobs:\n")) + len(block)
    # The block ends at the next job's line (4 spaces in) or the blank line after the last job.
    end = min(found.start() for found in re.finditer(r"\n(?=    \S|\n)", TEMPLATE[start:])) + start
    body = "".join(
        line + "\n" for line in TEMPLATE[start:end].splitlines() if line.strip().split(":")[0] not in keys
    ) + "".join(f"      {key}: {value}\n" for key, value in keys.items())
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE[:start] + body.rstrip("\n") + TEMPLATE[end:], encoding="utf-8")
    return path


def _violations(path: Path) -> list[Violation]:
    return check(Project.for_template(path), RULES)


def test_each_fix_names_the_declaration_key_and_its_value_passes(tmp_path: Path) -> None:
    # Given the hourly job's declaration with a short grace, a short dead-man range and retries past its next tick
    planted = _violations(_declared(tmp_path, GraceMinutes=30, DeadManPeriods=5, SchedulerMaxEventAgeSeconds=3600))

    fixes = {v.fix for v in planted}
    named = _named(fixes)
    # Then every fix names a key of the declaration, with the property it writes kept in the hint
    assert set(named) >= {"GraceMinutes", "SchedulerMaxEventAgeSeconds", "DeadManPeriodSeconds", "DeadManPeriods"}
    assert all("(written out: " in fix for fix in fixes if fix.startswith("set Mappings.Jobs."))

    # And the values named, declared, pass (the dead-man shape read again for the new grace)
    first = {key: named[key] for key in ("GraceMinutes", "SchedulerMaxEventAgeSeconds")}
    again = _named({v.fix for v in _violations(_declared(tmp_path, **first))})
    assert _violations(_declared(tmp_path, **first, **again)) == []


def _named(fixes: set[str]) -> dict[str, int]:
    """The declaration keys and values the fixes name (`set Mappings.Jobs.<Id>.Key: value, ... in template.yaml`)."""
    prefix = f"set Mappings.Jobs.{HOURLY.stem}."
    named: dict[str, int] = {}
    for fix in fixes:
        if fix.startswith(prefix):
            head = fix.removeprefix(prefix).split(" in template.yaml", 1)[0]
            named.update((key, int(value)) for key, value in re.findall(r"(\w+): (\d+)", head))
    return named


def test_a_shard_count_declared_apart_from_the_code_names_the_shards_key(tmp_path: Path) -> None:
    # Given the hourly job's declaration with twice the shards its code has
    assert HOURLY.worker_id is not None
    (shards,) = {m.maximum_concurrency for m in project_template().mappings_of(HOURLY.worker_id)}
    assert shards is not None
    for code in ("functions", "layers", "pyproject.toml"):  # the rule reads the code's count beside the template
        (tmp_path / code).symlink_to(PROJECT_ROOT / code)
    planted = check(Project.for_template(_declared(tmp_path, Shards=2 * shards)), [SHARDS_MATCH_CONCURRENCY_RULE])

    # Then the fix names the key with the code's count, and that count, declared, passes
    (violation,) = planted
    assert violation.fix.startswith(f"set Mappings.Jobs.{HOURLY.stem}.Shards: {shards} (")
    assert _named({violation.fix}) == {"Shards": shards}
    declared = _declared(tmp_path, Shards=shards)
    assert check(Project.for_template(declared), [SHARDS_MATCH_CONCURRENCY_RULE]) == []


def test_a_resource_belongs_to_the_longest_declared_id_it_starts_with() -> None:
    jobs: dict[str, object] = {"Order": {}, "OrderSweep": {}}

    assert declared_job_of("OrderSweepDeadManAlarm", jobs) == "OrderSweep"
    assert declared_job_of("OrderFunction", jobs) == "Order"
    assert declared_job_of("AlarmTopic", jobs) is None


def test_a_schedule_that_breaks_its_local_time_rule_is_told_the_schedule_that_keeps_it(tmp_path: Path) -> None:
    # Given the daily job with a local-time rule moved to an hour that breaks it
    planted = check(Project.for_template(_declared(tmp_path, LOCAL, Schedule="cron(0 11 * * ? *)")), [LOCAL_TIME_RULE])

    # Then each violation's fix names the job's Schedule key with a cron that keeps the rule
    prefix = f"set Mappings.Jobs.{LOCAL.stem}.Schedule: "
    assert planted
    assert all(v.fix.startswith(prefix) for v in planted)
    (schedule,) = {v.fix.removeprefix(prefix).split(" (", 1)[0] for v in planted}

    # And that schedule, declared, passes
    assert check(Project.for_template(_declared(tmp_path, LOCAL, Schedule=schedule)), [LOCAL_TIME_RULE]) == []


def test_an_expected_duration_past_the_timeout_is_one_fix_naming_its_key(tmp_path: Path) -> None:
    planted = check(Project.for_template(_declared(tmp_path, ExpectedDurationSeconds=500)), [DURATION_BOUND_RULE])

    (violation,) = planted
    assert violation.fix.startswith(f"set Mappings.Jobs.{HOURLY.stem}.ExpectedDurationSeconds: 60 (below 120)")
    assert check(Project.for_template(_declared(tmp_path, ExpectedDurationSeconds=60)), [DURATION_BOUND_RULE]) == []


def test_scheduler_numbers_outside_its_ranges_name_their_keys(tmp_path: Path) -> None:
    # Given retries and an event age CreateSchedule refuses (cfn-lint passes what the loop writes)
    planted = check(
        Project.for_template(_declared(tmp_path, SchedulerRetries=500, SchedulerMaxEventAgeSeconds=30)),
        [SCHEDULE_DELIVERY_RULE],
    )

    fixes = {v.fix.split(" in template.yaml", 1)[0] for v in planted}
    assert f"set Mappings.Jobs.{HOURLY.stem}.SchedulerRetries: 185 (Scheduler's range: 0-185)" in fixes
    assert f"set Mappings.Jobs.{HOURLY.stem}.SchedulerMaxEventAgeSeconds: 60 (or more)" in fixes
    assert not [
        v
        for v in check(
            Project.for_template(_declared(tmp_path, SchedulerRetries=185, SchedulerMaxEventAgeSeconds=60)),
            [SCHEDULE_DELIVERY_RULE],
        )
        if "outside Scheduler's" in v.message or "under Scheduler's minimum" in v.message
    ]


def test_a_lambda_event_age_outside_its_range_names_its_key(tmp_path: Path) -> None:
    planted = check(Project.for_template(_declared(tmp_path, LambdaMaxEventAgeSeconds=30000)), [FAILURE_PATHS_RULE])

    (violation,) = planted
    assert violation.fix.startswith(
        f"set Mappings.Jobs.{HOURLY.stem}.LambdaMaxEventAgeSeconds: 21600 (Lambda's range: 60-21600)"
    )
    assert check(Project.for_template(_declared(tmp_path, LambdaMaxEventAgeSeconds=21600)), [FAILURE_PATHS_RULE]) == []
