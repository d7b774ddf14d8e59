"""Rule `local-tick-alarm`: a job given a LocalTime in its declaration keeps the loops' alarm and grace
and passes; the alarm dropped from its loop, a grace other than its own, and an alarm that breaches
on missing data are each planted and caught. A job without a LocalTime is not asked."""

from __future__ import annotations

from pathlib import Path

from clockless_tools.architecture import check
from clockless_tools.architecture.local_tick_alarm import LOCAL_TICK_ALARM, LOCAL_TICK_ALARM_RULE
from clockless_tools.architecture.project import Project, Violation
from tests.conftest import PROJECT_ROOT
from tests.jobs import LOCAL_TIME_0730, declared, jobs

TEMPLATE = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
# The plain loop's job (its loop holds one): given 07:30 in New York and Chicago.
PLAIN = next(job for job in jobs() if job.worker_id is None)
LOOP = "  Fn::ForEach::JobsWithoutFanOut:\n"


def _with_local_time(text: str = TEMPLATE) -> str:
    return declared(text, PLAIN, LOCAL_TIME_0730)


def _in_loop(text: str, old: str, new: str) -> str:
    """`old` replaced once in the plain loop (it must be there)."""
    loop = text.index(LOOP)
    at = text.index(old, loop)
    return text[:at] + new + text[at + len(old) :]


def _violations(tmp_path: Path, text: str) -> list[Violation]:
    """The rule's violations about the planted job (a project's own LocalTime jobs may share the loop)."""
    path = tmp_path / "template.yaml"
    path.write_text(text, encoding="utf-8")
    found = check(Project.for_template(path), [LOCAL_TICK_ALARM_RULE])
    return [v for v in found if v.resource.startswith(PLAIN.stem) or f"job {PLAIN.name} " in v.message]


def _alarm_block(text: str) -> str:
    """The plain loop's alarm resource, from its key to the blank line after it."""
    start = text.index('      "${Job}LocalTickMissedAlarm":\n', text.index(LOOP))
    return text[start : text.index("\n\n", start) + 2]


def test_the_template_and_a_job_given_a_local_time_hold_it(tmp_path: Path) -> None:
    assert _violations(tmp_path, TEMPLATE) == []
    assert _violations(tmp_path, _with_local_time()) == []


def test_the_alarm_dropped_from_the_loop_is_caught_for_the_local_time_job_only(tmp_path: Path) -> None:
    text = _with_local_time()
    dropped = _in_loop(text, _alarm_block(text), "")

    (violation,) = _violations(tmp_path, dropped)
    assert violation.rule == LOCAL_TICK_ALARM
    assert violation.resource == PLAIN.function_id
    assert f"job {PLAIN.name} keeps 07:30 local and no alarm watches its LocalTickMissed" in violation.message
    # And without the LocalTime the same template passes: the rule asks only jobs that keep one
    assert _violations(tmp_path, _in_loop(TEMPLATE, _alarm_block(TEMPLATE), "")) == []


def test_a_grace_other_than_the_jobs_is_caught(tmp_path: Path) -> None:
    planted = _in_loop(
        _with_local_time(),
        "LOCAL_TICK_GRACE_MINUTES: !FindInMap [Jobs, !Ref Job, GraceMinutes, {DefaultValue: 130}]",
        'LOCAL_TICK_GRACE_MINUTES: "1380"',
    )

    (violation,) = _violations(tmp_path, planted)
    assert violation.resource == PLAIN.function_id
    assert "its LOCAL_TICK_GRACE_MINUTES is 1380, not its grace_minutes" in violation.message


def test_an_alarm_that_breaches_on_missing_data_is_caught(tmp_path: Path) -> None:
    text = _with_local_time()
    block = _alarm_block(text)
    planted = _in_loop(text, block, block.replace("TreatMissingData: notBreaching", "TreatMissingData: breaching"))

    (violation,) = _violations(tmp_path, planted)
    assert violation.resource == f"{PLAIN.stem}LocalTickMissedAlarm"
    assert "TreatMissingData 'breaching'" in violation.message
