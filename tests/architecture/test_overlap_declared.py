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
    for overlap, policy in (
        ('"run-both"', "run-both"),
        ('"skip"', "skip"),
        ('"buffer"', "buffer"),
        ("Overlap.SKIP", "skip"),
        ("POLICY", "skip"),
    ):
        for relative, original in originals.items():
            planted.write(relative, original)
        for logical_id, relative, line in jobs:
            if overlap == '"buffer"' and not template.workers_of(logical_id):
                continue  # buffer needs a worker to start the held tick: refused below for a job without one
            planted.replace(relative, line, f'from clockless.overlap import Overlap\n\nPOLICY = "skip"\n{line}')
            _declare(planted, relative, line, overlap)
        # The template's declarations say the same (each job's Mappings.Jobs entry: OverlapGrants grants it).
        planted.declare_overlap({logical_id.removesuffix("Function"): policy for logical_id, _, _ in jobs})
        assert planted.violations(RULE) == [], overlap


def test_buffer_on_a_job_no_worker_starts_is_caught(planted: PlantedCopy) -> None:
    logical_id, relative, line = _fanned_out_job(planted)
    _declare(planted, relative, line, '"buffer"')
    # Given no worker declaring worker_of the job any more
    planted.replace("template.yaml", f"worker_of: {logical_id}", "worker_of: NoSuchFunction")

    found(planted.violations(RULE), file=relative, resource=logical_id, containing="stay buffered for ever")


def test_a_skip_job_whose_function_may_not_record_the_hold_is_caught(planted: PlantedCopy) -> None:
    logical_id, relative, line = _jobs(planted)[0]
    # Given its code skips while the template's declaration leaves the default, run-both: the
    # function's ledger statement is what a run-both job needs
    _declare(planted, relative, line, '"skip"')

    violations = planted.violations(RULE)

    for action in ("dynamodb:Query", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"):
        violation = found(violations, file="template.yaml", resource=logical_id, containing=f"may not {action} on")
        assert "overlap='skip'" in violation.message
        assert "declare Overlap: skip in the job's Mappings.Jobs entry" in violation.fix
        assert "!GetAtt LedgerTable.Arn" in violation.fix


def test_a_buffer_job_whose_worker_may_not_read_the_last_success_is_caught(planted: PlantedCopy) -> None:
    logical_id, relative, line = _fanned_out_job(planted)
    worker = next(iter(planted.project.template.workers_of(logical_id)))
    _declare(planted, relative, line, '"buffer"')
    planted.declare_overlap({logical_id.removesuffix("Function"): "buffer"})
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
