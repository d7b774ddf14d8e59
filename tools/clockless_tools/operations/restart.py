"""`clockless run-now <job> --at <tick> --restart`: a fanned-out tick whose partition messages were
lost (a purged work queue, a message deleted by hand) sent its partitions again.

A tick's delivery is answered from its idempotency record once it was claimed, so delivering it
again sends nothing: its coordinator ran. What the ledger knows is enough to hand the partitions
out again as the coordinator did: the tick entry's `partitions_total`, trigger and the coordinator's
params (`coordinator_summary`), and each partition record's state. A partition done is left alone;
so is one a live worker holds (its lease has not run out). Every other partition gets the message
the coordinator sent it, hop 0: the workers check it against the ledger as any message
(clockless.fanout.trust), a partition that ran before resumes from its cursor, and a partition
whose message is in fact still queued runs once all the same (the second message finds it done
or held). So each item is still applied once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from clockless import Trigger, format_scheduled_time
from clockless.fanout.finisher import Finisher
from clockless.fanout.messages import KIND_PARTITION, WorkMessage
from clockless.fanout.queue import WorkQueue
from clockless.ledger import STATUS_STARTED, LedgerEntry
from clockless.state import PartitionRecord
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.operations.targets import JobTarget, OperationError, require_job
from clockless_tools.operations.work import work_queues
from clockless_tools.template.model import Template

RESTART_FLAG = "--restart"


@dataclass(frozen=True)
class Restarted:
    job: str
    scheduled_time: datetime
    partitions_total: int
    done: list[str]
    held: list[str]  # a live worker holds them: left to it
    resent: list[str]

    def line(self) -> str:
        """`re-sent 16 of 16 partition(s) (the ones not done; 0 done, 0 held by a live worker)`."""
        return (
            f"re-sent {len(self.resent)} of {self.partitions_total} partition(s) (those not done: "
            f"{len(self.done)} done, {len(self.held)} held by a live worker, left alone)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "scheduled_time": format_scheduled_time(self.scheduled_time),
            "partitions_total": self.partitions_total,
            "done": self.done,
            "held": self.held,
            "resent": self.resent,
        }


def declared_partitions(template: Template, job: str) -> Sequence[str]:
    """The partitions the job's worker declares (its `FanOut`), read from its code as Lambda loads it."""
    worker = work_queues(template, job).worker
    # Importing a handler touches no AWS (the kit's rule): the code is all that is read here.
    handler = LocalLambdaRuntime(template, endpoint="").handler(worker)
    fan_out = getattr(handler, "clockless_worker", None)
    if fan_out is None:
        raise OperationError(f"{worker}'s handler is not a clockless FanOut worker: its partitions are unknown")
    return tuple(fan_out.partitions)


def restart(target: JobTarget, template: Template, job: str, scheduled_time: datetime, *, now_ms: int) -> Restarted:
    """Send again the partition messages of a started, fanned-out tick whose partitions are not done
    and not held; OperationError (nothing sent) for a tick that is not one."""
    require_job(template, job)
    when = format_scheduled_time(scheduled_time)
    entry = _entry(target, job, scheduled_time)
    if entry is None:
        raise OperationError(f"{RESTART_FLAG}: {job} @ {when} has no ledger entry (it never ran): run it without it")
    if entry.partitions_total is None:
        raise OperationError(
            f"{RESTART_FLAG}: {job} @ {when} did not fan out (status {entry.status}): it has no partitions to send "
            "again"
        )
    if entry.status != STATUS_STARTED:
        hint = f"; its failed items: `clockless work redrive {job}`" if entry.status == "failed" else ""
        raise OperationError(f"{RESTART_FLAG}: {job} @ {when} is {entry.status}, not started: nothing to restart{hint}")
    if entry.coordinator_summary is None:
        raise OperationError(
            f"{RESTART_FLAG}: {job} @ {when}: its coordinator has not completed (no coordinator_summary), so its "
            "params are unknown; deliver it again once the claim has run out"
        )
    partitions = declared_partitions(template, job)
    if len(partitions) != entry.partitions_total:
        raise OperationError(
            f"{RESTART_FLAG}: {job} @ {when} was fanned out to {entry.partitions_total} partition(s) and its worker "
            f"now declares {len(partitions)}: restarting it would not be the tick its coordinator began"
        )
    ledger = target.ledger()
    records = {
        record.partition: record
        for record in map(PartitionRecord.from_item, Finisher(ledger.client, ledger.table_name).records(job, when))
        if not record.is_lane
    }
    done, held, resend = [], [], []
    for partition in partitions:
        record = records.get(partition) or PartitionRecord()
        if record.done:
            done.append(partition)
        elif record.lease_ends >= now_ms:
            held.append(partition)
        else:
            resend.append(partition)
    params = {name: value for name, value in entry.coordinator_summary.items() if name != "fan_out"}
    trigger = Trigger(entry.trigger or Trigger.SCHEDULE.value)
    bodies = [WorkMessage(KIND_PARTITION, job, scheduled_time, trigger, p, params).body() for p in resend]
    if bodies:
        WorkQueue(target.sqs(), target.queue_url(work_queues(template, job).queue)).send_all(bodies)
    return Restarted(job, scheduled_time, entry.partitions_total, done, held, resend)


def _entry(target: JobTarget, job: str, scheduled_time: datetime) -> LedgerEntry | None:
    return next(iter(target.ledger().entries(job, scheduled_time, scheduled_time + timedelta(seconds=1))), None)
