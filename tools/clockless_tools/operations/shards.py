"""`clockless shards check`: a deploy that lowers a fanned-out job's shard count is refused unless
it follows the migration (docs/fan-out.md#changing-a-jobs-shard-count).

A tick runs with the count its coordinator fanned it out into (the ledger's `partitions_total`),
which workers check, so raising the count is safe at any moment. Lowering it is not: the items
under the dropped shards are read by no later tick, whichever function the deploy updates first.
So before `sam deploy` (`make deploy` runs this first) each fanned-out job's count in the template
is compared with the count of its latest fanned-out tick in the deployed ledger. A lower count is
refused unless the job is paused (`clockless pause`, the migration's first step) and none of its
ticks is still `started` (its partitions would meet workers that refuse them). A job with no
fanned-out tick yet, or a stack not deployed yet, has nothing to compare.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from clockless.ledger import STATUS_STARTED, RunLedger
from clockless_tools.operations.pause import current_pause
from clockless_tools.operations.targets import JobTarget
from clockless_tools.template.model import Template

MIGRATION: Final = "docs/fan-out.md#changing-a-jobs-shard-count"
# Tick entries' sort keys are ISO times: every one sorts between these, every other record of the
# job's partition (`state#...`, the pause history) after them.
_FIRST_TICK: Final = "0"
_LAST_TICK: Final = "9999"
# How many of the latest fanned-out ticks are looked at for one still `started`: the tick reaper
# settles each past its job's grace, so an older one is not left started.
LOOK_BACK: Final = 48


@dataclass(frozen=True, slots=True)
class Fanned:
    """The job's latest fanned-out tick, as the ledger holds it, and whether any is still `started`."""

    scheduled_time: str
    partitions_total: int
    started: str | None = None  # the scheduled time of a tick still `started` (the latest such)


@dataclass(frozen=True, slots=True)
class ShardCheck:
    job: str
    declared: int  # the template's count (Mappings.Jobs.<Id>.Shards, its workers' MaximumConcurrency)
    fanned: Fanned | None
    paused: bool

    @property
    def refusal(self) -> str | None:
        """Why a deploy of the declared count is refused; None: it may go ahead."""
        fanned = self.fanned
        if fanned is None or self.declared >= fanned.partitions_total:
            return None
        lowered = (
            f"{self.job}: the template fans out into {self.declared} partitions, but its tick "
            f"{fanned.scheduled_time} was fanned out into {fanned.partitions_total}: the items under shards "
            f"{self.declared} to {fanned.partitions_total - 1} would be read by no tick"
        )
        if not self.paused:
            return f"{lowered}; pause the job and follow the migration ({MIGRATION})"
        if fanned.started is not None:
            return (
                f"{lowered}, and its tick {fanned.started} is still started: wait until `clockless status` shows it "
                f"settled ({MIGRATION})"
            )
        return None

    def line(self) -> str:
        refusal = self.refusal
        if refusal is not None:
            return f"refused: {refusal}"
        if self.fanned is None:
            return f"{self.job}: {self.declared} partitions; no fanned-out tick in the ledger yet"
        before = self.fanned.partitions_total
        if self.declared < before:
            return (
                f"{self.job}: {self.declared} partitions, lowered from {before} while paused: move the items under "
                f"shards {self.declared} to {before - 1} before resuming ({MIGRATION})"
            )
        change = "unchanged" if self.declared == before else f"raised from {before}"
        return f"{self.job}: {self.declared} partitions, {change}"


def declared_shards(template: Template) -> dict[str, int]:
    """Each fanned-out job's shard count in the template: its workers' MaximumConcurrency, which
    rule shards-match-concurrency holds to the count its code fans out into."""
    counts = {}
    for job in template.jobs:
        coordinator = template.function_for_job(job)
        for worker_id in template.workers_of(coordinator.logical_id):
            for mapping in template.mappings_of(worker_id):
                if mapping.maximum_concurrency is not None:
                    counts[job] = mapping.maximum_concurrency
    return counts


def latest_fanned_out(ledger: RunLedger, job: str) -> Fanned | None:
    """The job's latest tick entry with a `partitions_total`, and the latest still `started` among
    the `LOOK_BACK` newest (newest first)."""
    request: dict[str, Any] = {
        "TableName": ledger.table_name,
        "KeyConditionExpression": "job = :job AND scheduled_time BETWEEN :first AND :last",
        "FilterExpression": "attribute_exists(partitions_total)",
        "ProjectionExpression": "scheduled_time, partitions_total, #status",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {
            ":job": {"S": job},
            ":first": {"S": _FIRST_TICK},
            ":last": {"S": _LAST_TICK},
        },
        "ScanIndexForward": False,
        "PaginationConfig": {"PageSize": LOOK_BACK},
    }
    latest: Fanned | None = None
    started: str | None = None
    for seen, item in enumerate(_items(ledger, request)):
        scheduled_time = item["scheduled_time"]["S"]
        if latest is None:
            latest = Fanned(scheduled_time, int(item["partitions_total"]["N"]))
        if item.get("status", {}).get("S") == STATUS_STARTED:
            started = scheduled_time
            break
        if seen + 1 >= LOOK_BACK:
            break
    if latest is None:
        return None
    return Fanned(latest.scheduled_time, latest.partitions_total, started)


def _items(ledger: RunLedger, request: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
    for page in ledger.client.get_paginator("query").paginate(**request):
        yield from page.get("Items") or []


def check_shards(target: JobTarget, declared_counts: Mapping[str, int]) -> list[ShardCheck]:
    """Each fanned-out job's count to deploy (`declared_shards`) against its ledger's latest
    fanned-out tick."""
    ledger = target.ledger()
    checks = []
    for job, declared in declared_counts.items():
        fanned = latest_fanned_out(ledger, job)
        paused = fanned is not None and declared < fanned.partitions_total and current_pause(target, job) is not None
        checks.append(ShardCheck(job, declared, fanned, paused))
    return checks
