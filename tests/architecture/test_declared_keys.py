"""A declared job's fix hints name the `Mappings: Jobs: <Id>:` key the user edits, with a value that
passes: planted in the declaration (not the written-out resources), each is caught by its rule, and
the hint's value, put back in the declaration, passes."""

from __future__ import annotations

import re
from pathlib import Path

from clockless_tools.architecture import check
from clockless_tools.architecture.dead_man_alarm import DEAD_MAN_ALARM_RULE
from clockless_tools.architecture.declared_keys import declared_job_of
from clockless_tools.architecture.project import Project, Violation
from clockless_tools.architecture.schedule_delivery import SCHEDULE_DELIVERY_RULE
from clockless_tools.architecture.shards_match_concurrency import SHARDS_MATCH_CONCURRENCY_RULE
from tests.conftest import PROJECT_ROOT
from tests.jobs import HOUR, job_where, project_template

TEMPLATE = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
HOURLY = job_where(period=HOUR)
RULES = [DEAD_MAN_ALARM_RULE, SCHEDULE_DELIVERY_RULE]


def _declared(tmp_path: Path, **keys: int) -> Path:
    """template.yaml with the hourly job's declaration given these keys (its own lines for them replaced)."""
    block = f"    {HOURLY.stem}:\n"
    start = TEMPLATE.index(block, TEMPLATE.index("  Jobs:\n")) + len(block)
    end = TEMPLATE.index("\n\n", start)
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
