"""Rule `overlap-declared`: a job's overlap policy misspelt, not stated as a literal, or `buffer`
on a job no worker starts it for, each caught; the template's jobs (default run-both) and the
valid policies pass. Plants go into the handler of each job the template schedules."""

from __future__ import annotations

import re
from pathlib import Path

from tests.architecture.planting import PlantedCopy, found

RULE = "overlap-declared"
_JOB = re.compile(r"^(?P<variable>\w+) = ScheduledJob\((?P<args>[^)\n]*)\)$", re.MULTILINE)


def _jobs(planted: PlantedCopy) -> list[tuple[str, str, str]]:
    """(logical id, handler file relative to the copy, its `ScheduledJob(...)` line) per scheduled job."""
    project = planted.project
    jobs = []
    for logical_id, fn in project.template.scheduled_functions.items():
        path = project.handler_location(fn).path
        assert path is not None
        text = Path(path).read_text(encoding="utf-8")
        match = _JOB.search(text)
        assert match is not None, f"{logical_id}: no one-line ScheduledJob(...) in {path}"
        jobs.append((logical_id, str(Path(path).relative_to(planted.root)), match.group(0)))
    assert jobs
    return jobs


def _fanned_out_job(planted: PlantedCopy) -> tuple[str, str, str]:
    """The first scheduled job a worker starts (buffer's plants need one)."""
    template = planted.project.template
    return next(job for job in _jobs(planted) if template.workers_of(job[0]))


def _declare(planted: PlantedCopy, relative: str, line: str, overlap: str) -> None:
    planted.replace(relative, line, f"{line[:-1]}, overlap={overlap})")


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations(RULE) == []


def test_each_known_policy_stated_plainly_passes(planted: PlantedCopy) -> None:
    jobs = _jobs(planted)
    template = planted.project.template
    originals = {relative: (planted.root / relative).read_text(encoding="utf-8") for _, relative, _ in jobs}
    for overlap in ('"run-both"', '"skip"', '"buffer"', "Overlap.SKIP", "POLICY"):
        for logical_id, relative, line in jobs:
            planted.write(relative, originals[relative])
            if overlap == '"buffer"' and not template.workers_of(logical_id):
                continue  # buffer needs a worker to start the held tick: refused below for a job without one
            planted.replace(relative, line, f'from clockless.overlap import Overlap\n\nPOLICY = "skip"\n{line}')
            _declare(planted, relative, line, overlap)
        assert planted.violations(RULE) == [], overlap


def test_a_policy_the_kit_does_not_know_is_caught(planted: PlantedCopy) -> None:
    jobs = _jobs(planted)
    originals = {relative: (planted.root / relative).read_text(encoding="utf-8") for _, relative, _ in jobs}
    # misspelt, in the wrong case, computed
    for overlap, shown in (('"skip-it"', "overlap='skip-it'"), ('"Skip"', "overlap='Skip'"), ("f()", "overlap=f()")):
        for logical_id, relative, line in jobs:
            planted.write(relative, originals[relative])
            _declare(planted, relative, line, overlap)
            violation = found(planted.violations(RULE), file=relative, resource=logical_id, containing=shown)
            assert "is not a policy the kit knows" in violation.message
            assert violation.line is not None
            text = (planted.root / relative).read_text(encoding="utf-8").splitlines()
            assert f"overlap={overlap}" in text[violation.line - 1]


def test_buffer_on_a_job_no_worker_starts_is_caught(planted: PlantedCopy) -> None:
    logical_id, relative, line = _fanned_out_job(planted)
    _declare(planted, relative, line, '"buffer"')
    # Given no worker declaring worker_of the job any more
    planted.replace("template.yaml", f"worker_of: {logical_id}", "worker_of: NoSuchFunction")

    found(planted.violations(RULE), file=relative, resource=logical_id, containing="stay buffered for ever")


def test_a_skip_job_whose_function_may_not_record_the_hold_is_caught(planted: PlantedCopy) -> None:
    logical_id, relative, line = _jobs(planted)[0]
    _declare(planted, relative, line, '"skip"')
    # Given its function's ledger statement back to what a run-both job needs
    planted.replace(
        "template.yaml",
        "Action: [dynamodb:UpdateItem, dynamodb:Query, dynamodb:PutItem, dynamodb:ConditionCheckItem]",
        "Action: [dynamodb:UpdateItem]",
        resource=logical_id,
    )

    violations = planted.violations(RULE)

    for action in ("dynamodb:Query", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"):
        violation = found(violations, file="template.yaml", resource=logical_id, containing=f"may not {action} on")
        assert "overlap='skip'" in violation.message
        assert "!GetAtt LedgerTable.Arn" in violation.fix


def test_a_buffer_job_whose_worker_may_not_read_the_last_success_is_caught(planted: PlantedCopy) -> None:
    logical_id, relative, line = _fanned_out_job(planted)
    worker = next(iter(planted.project.template.workers_of(logical_id)))
    _declare(planted, relative, line, '"buffer"')
    # Given its worker without the grant on the ledger's index
    planted.replace(
        "template.yaml",
        'Resource: !Sub "${LedgerTable.Arn}/index/succeeded-by-time"',
        "Resource: !GetAtt LedgerTable.Arn",
        resource=worker,
    )

    violation = found(
        planted.violations(RULE),
        file="template.yaml",
        resource=worker,
        containing="may not dynamodb:Query on LedgerTable/index/succeeded-by-time",
    )
    assert 'index/succeeded-by-time"' in violation.fix
