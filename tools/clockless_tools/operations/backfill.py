"""`clockless backfill`: each tick in a range that never succeeded, replayed with the scheduler's
payload (trigger backfill)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from clockless import Trigger, format_scheduled_time
from clockless.tick import utc_now
from clockless_tools.operations.pause import guard_pause
from clockless_tools.operations.report import (
    OUTCOME_FAILED,
    OUTCOME_NOT_DONE,
    OUTCOME_STILL_FAILING,
    failing_line,
    tick_trouble,
    verdict,
    what_it_did,
)
from clockless_tools.operations.spans import format_span
from clockless_tools.operations.status import expected_ticks, missing_ticks
from clockless_tools.operations.targets import JobTarget, OperationError, PartitionsFailing, require_job, tick_event
from clockless_tools.template.model import Template

# The outcome of a replayed tick that was claimed and fanned out and whose partitions fail.
OUTCOME_PARTITIONS_FAILING = "partitions failing"
# The outcomes of a replayed tick that is not done (each with its line in `did`): counted apart
# from the replayed ones, and the command's exit says so.
NOT_DONE_OUTCOMES = (OUTCOME_PARTITIONS_FAILING, OUTCOME_STILL_FAILING, OUTCOME_FAILED, OUTCOME_NOT_DONE)
DEFAULT_MAX_BACKFILL_TICKS = 200
DEFAULT_MAX_BACKFILL_RANGE = timedelta(days=31)


class BackfillPolicy(StrEnum):
    ALL = "all"  # replay every missing tick, oldest first
    LATEST = "latest"  # replay only the newest missing tick (the job heals the rest itself)
    SKIP = "skip"  # replay none; record each as deliberately skipped so it stops being reported


@dataclass
class BackfillResult:
    job: str
    policy: BackfillPolicy
    missing: list[datetime]
    planned: list[datetime]
    outcomes: dict[str, str] = field(default_factory=dict)  # scheduled time -> outcome
    # scheduled time -> one line: whether it ran and what the ledger says it did
    did: dict[str, str] = field(default_factory=dict)
    dry_run: bool = False
    # Ticks of [start, end) after now: not missing, never replayed; the schedule will deliver them.
    not_yet_due: int = 0
    # Older missing ticks `latest` records as skipped once the newest is replayed: time -> outcome.
    superseded: dict[str, str] = field(default_factory=dict)

    @property
    def verb(self) -> str:
        """What was (or, dry, would be) done to each planned tick."""
        if self.policy is BackfillPolicy.SKIP:
            return "would skip" if self.dry_run else "recorded as skipped"
        return "would replay" if self.dry_run else "replayed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "policy": self.policy.value,
            "dry_run": self.dry_run,
            "missing": [format_scheduled_time(t) for t in self.missing],
            "planned": [format_scheduled_time(t) for t in self.planned],
            "outcomes": self.outcomes,
            "did": self.did,
            "not_yet_due": self.not_yet_due,
            "superseded": self.superseded,
        }


def backfill(
    template: Template,
    target: JobTarget,
    job: str,
    *,
    start: datetime,
    end: datetime,
    policy: BackfillPolicy,
    dry_run: bool = False,
    force: bool = False,
    override_pause: bool = False,
    max_ticks: int = DEFAULT_MAX_BACKFILL_TICKS,
    max_range: timedelta = DEFAULT_MAX_BACKFILL_RANGE,
    on_plan: Callable[[list[datetime]], None] = lambda _planned: None,
    on_tick: Callable[[datetime, str], None] = lambda _t, _o: None,
    now: datetime | None = None,
) -> BackfillResult:
    """Replay each tick in [start, end) that never succeeded, through the job's own function.

    A paused job is refused (`JobPaused`, nothing replayed) unless `override_pause`, which the
    ledger records per tick. Ticks after `now` (default: this machine's clock) are left out: they have not happened.
    `latest` replays the newest missing tick and, once it has run, records the older ones as
    skipped (superseded by it), so the next backfill of the range finds nothing to do.
    """
    require_job(template, job)
    if end <= start:
        raise OperationError(
            f"--to ({format_scheduled_time(end)}) must be after --from ({format_scheduled_time(start)})"
        )
    now = utc_now() if now is None else now
    spec = target.schedule_spec(job)
    scheduled = expected_ticks(spec, start, end)
    expected = [t for t in scheduled if t <= now]
    if not force and (end - start > max_range or len(expected) > max_ticks):
        raise OperationError(
            f"refusing to backfill {len(expected)} ticks over {format_span(end - start)} (limits: {max_ticks} "
            f"ticks, {format_span(max_range)}); narrow the range or pass --force"
        )
    missing = missing_ticks(spec, target.ledger(), job, start, end, now=now)
    planned = {BackfillPolicy.ALL: missing, BackfillPolicy.LATEST: missing[-1:], BackfillPolicy.SKIP: missing}[policy]
    not_yet_due = len(scheduled) - len(expected)
    result = BackfillResult(
        job=job, policy=policy, missing=missing, planned=planned, dry_run=dry_run, not_yet_due=not_yet_due
    )
    older = missing[:-1] if policy is BackfillPolicy.LATEST else []
    on_plan(planned)
    if dry_run:
        result.superseded = {format_scheduled_time(t): "would skip (superseded by the newest)" for t in older}
        return result
    if planned and policy is not BackfillPolicy.SKIP:
        guard_pause(target, job, override=override_pause, what="backfill", ticks=planned, now=now)
    for scheduled_time in planned:
        key = format_scheduled_time(scheduled_time)
        if policy is BackfillPolicy.SKIP:
            recorded = target.ledger().record_skipped(job, scheduled_time, reason="skipped by clockless backfill")
            outcome = "skipped" if recorded else "already recorded"
        else:
            outcome, result.did[key] = _replay(template, target, job, scheduled_time)
        result.outcomes[key] = outcome
        on_tick(scheduled_time, outcome)
    if planned and result.outcomes.get(format_scheduled_time(planned[-1])) in ("executed", "duplicate"):
        newest = format_scheduled_time(planned[-1])
        # The reason names the command that recorded it, as it was run.
        run = f"clockless backfill {job} --from {format_scheduled_time(start)} --to {format_scheduled_time(end)}"
        for scheduled_time in older:
            recorded = target.ledger().record_skipped(
                job, scheduled_time, reason=f"superseded by {newest} ({run} --policy latest)"
            )
            result.superseded[format_scheduled_time(scheduled_time)] = (
                "skipped (superseded by the newest)" if recorded else "already recorded"
            )
    return result


def _replay(template: Template, target: JobTarget, job: str, scheduled_time: datetime) -> tuple[str, str]:
    """Deliver the tick (trigger backfill): its outcome, and one line of whether it ran and what it did."""
    try:
        response = target.invoke(job, tick_event(target, job, scheduled_time, Trigger.BACKFILL))
    except PartitionsFailing as failing:
        # Claimed and fanned out: the next ticks are independent of its workers, go on.
        return OUTCOME_PARTITIONS_FAILING, failing_line(job, failing)
    trouble = tick_trouble(template, target, job, response, now=utc_now())
    if trouble is not None:
        return trouble
    return str(response.get("outcome")), f"{verdict(response)}: {what_it_did(target, job, response)}"
