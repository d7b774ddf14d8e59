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
from clockless_tools.operations.status import due_ticks, missing_ticks
from clockless_tools.operations.targets import JobTarget, OperationError, require_job, tick_event
from clockless_tools.template.expressions import ticks_between
from clockless_tools.template.model import Template

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
    dry_run: bool = False
    # Ticks of [start, end) after now: not missing, never replayed; the schedule will deliver them.
    not_yet_due: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "policy": self.policy.value,
            "dry_run": self.dry_run,
            "missing": [format_scheduled_time(t) for t in self.missing],
            "planned": [format_scheduled_time(t) for t in self.planned],
            "outcomes": self.outcomes,
            "not_yet_due": self.not_yet_due,
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
    max_ticks: int = DEFAULT_MAX_BACKFILL_TICKS,
    max_range: timedelta = DEFAULT_MAX_BACKFILL_RANGE,
    on_tick: Callable[[datetime, str], None] = lambda _t, _o: None,
    now: datetime | None = None,
) -> BackfillResult:
    """Replay each tick in [start, end) that never succeeded, through the job's own function.
    Ticks after `now` (default: this machine's clock) are left out: they have not happened."""
    require_job(template, job)
    if end <= start:
        raise OperationError(
            f"--to ({format_scheduled_time(end)}) must be after --from ({format_scheduled_time(start)})"
        )
    now = utc_now() if now is None else now
    expected = due_ticks(template, job, start, end, now=now)
    if not force and (end - start > max_range or len(expected) > max_ticks):
        raise OperationError(
            f"refusing to backfill {len(expected)} ticks over {end - start} (limits: {max_ticks} ticks, "
            f"{max_range}); narrow the range or pass --force"
        )
    missing = missing_ticks(template, target.ledger(), job, start, end, now=now)
    planned = {BackfillPolicy.ALL: missing, BackfillPolicy.LATEST: missing[-1:], BackfillPolicy.SKIP: missing}[policy]
    not_yet_due = len(ticks_between(template.jobs[job].expression, start, end)) - len(expected)
    result = BackfillResult(
        job=job, policy=policy, missing=missing, planned=planned, dry_run=dry_run, not_yet_due=not_yet_due
    )
    if dry_run:
        return result
    for scheduled_time in planned:
        key = format_scheduled_time(scheduled_time)
        if policy is BackfillPolicy.SKIP:
            recorded = target.ledger().record_skipped(job, scheduled_time, reason="skipped by clockless backfill")
            outcome = "skipped" if recorded else "already recorded"
        else:
            response = target.invoke(job, tick_event(target, job, scheduled_time, Trigger.BACKFILL))
            outcome = str(response.get("outcome"))
        result.outcomes[key] = outcome
        on_tick(scheduled_time, outcome)
    return result
