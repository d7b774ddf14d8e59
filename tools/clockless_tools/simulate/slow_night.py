"""A slow night (`clockless simulate --slow-night`): the fanned-out jobs' workers lag, so later
ticks arrive while earlier ones still run, and each job's overlap policy (clockless.overlap) is
judged by what the ledger and the tables say.

Every work queue of a job waits `SLOW_NIGHT_INTERVALS` of the job's tick interval from the moment a
message is waiting until its workers come (an hourly job's: 2.5 h), and then they drain everything
visible, as the normal run does. So an hourly job meets two ticks while its tick before still runs.
`--overlap` replaces every job's declared policy for the run (`buffer` only where workers start a
buffered tick: on a job without fan-out the declared policy stays).

The judge, per job, beside exactly once (the tables against the reference replay, which never
delivers a tick the simulation skipped, and delivers a buffered one where it took effect):
- a tick answered `skipped` is `skipped` in the ledger with the reason `overlap: <earlier> ...`;
- a tick answered `buffered` ran after the earlier one settled: its entry `succeeded`, released by
  the tick it waited for, started no earlier than that tick finished;
- nothing is lost: every tick took effect or is skipped with its reason (`ticks missed` otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from clockless.overlap import OUTCOME_BUFFERED, OUTCOME_SKIPPED, Overlap
from clockless_tools.local.event_sources import worker_functions
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.simulate.snapshot import Snapshot, plain
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template

# How long (in the job's tick intervals) a waiting work message waits for its workers.
SLOW_NIGHT_INTERVALS: Final = 2.5
# A schedule without a next tick (a one-off at()) waits this long.
SCHEDULE_LOOK_AHEAD: Final = timedelta(days=366)
HELD_OUTCOMES: Final = frozenset({OUTCOME_SKIPPED, OUTCOME_BUFFERED})
_ENTRY_FIELDS: Final = ("status", "reason", "overlap_with", "released_by", "started_at", "finished_at")


def worker_lags(template: Template, ticks: Mapping[str, Iterable[datetime]]) -> dict[str, timedelta]:
    """Per job that fans out, how long its waiting messages wait for a worker: SLOW_NIGHT_INTERVALS
    of its schedule's gap between ticks (from its first tick in the range to the next)."""
    lags = {}
    for job, times in ticks.items():
        schedule = template.jobs[job]
        first = min(times, default=None)
        if first is None or not worker_functions(template, schedule.function_id):
            continue
        following = schedule.spec(template).next_ticks(first, 1)
        gap = following[0] - first if following else SCHEDULE_LOOK_AHEAD
        lags[job] = gap * SLOW_NIGHT_INTERVALS
    return lags


def policies_in_force(template: Template, runtime: LocalLambdaRuntime, override: str | None) -> dict[str, str]:
    """Each job's overlap policy for the run: `override` where the job can follow it (`buffer` needs
    workers to start the buffered tick), its declared one otherwise. Sets it on the job."""
    policies = {}
    for job, schedule in template.jobs.items():
        declared = getattr(runtime.handler(schedule.function_id), "clockless_job", None)
        if declared is None:
            continue  # a function without the kit has no policy to follow
        fans_out = bool(worker_functions(template, schedule.function_id))
        if override is not None and (override != Overlap.BUFFER or fans_out):
            declared.overlap = Overlap(override)
        policies[job] = str(declared.overlap)
    return policies


def ledger_entries(snapshot: Snapshot, template: Template, job: str) -> dict[str, dict[str, Any]]:
    """The job's ledger entries by scheduled time: what overlap is judged on, as plain values."""
    ledgers = template.tables_of_kind("ledger")
    items = snapshot.get(LocalNames().table_name(ledgers[0]), []) if ledgers else []
    return {
        str(plain(item["scheduled_time"])): {
            name: plain(item[name]) if name in item else None for name in _ENTRY_FIELDS
        }
        for item in items
        if plain(item["job"]) == job
    }


def judge_overlap(
    job: str, skipped: Iterable[str], buffered: Iterable[str], entries: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """What the ledger contradicts of the ticks answered `skipped` and `buffered` (by scheduled time)."""
    problems = []
    for moment in sorted(set(skipped)):
        entry = entries.get(moment) or {}
        if not _skipped_by_overlap(entry):
            problems.append(f"{job}@{moment}: answered skipped, the ledger says {_said(entry)}")
    for moment in sorted(set(buffered)):
        entry = entries.get(moment) or {}
        earlier = entries.get(str(entry.get("overlap_with"))) or {}
        if entry.get("status") != "succeeded" or entry.get("released_by") != entry.get("overlap_with"):
            problems.append(f"{job}@{moment}: buffered, then {_said(entry)}, not succeeded after its release")
        elif earlier.get("status") != "succeeded" or str(earlier.get("finished_at")) > str(entry.get("started_at")):
            problems.append(
                f"{job}@{moment}: started at {entry.get('started_at')}, before {entry.get('overlap_with')} "
                f"settled ({_said(earlier)}, finished {earlier.get('finished_at')})"
            )
    return problems


def started_by_release(entries: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Scheduled times of the ticks a finisher started from the buffer and that succeeded."""
    return {
        moment for moment, entry in entries.items() if entry.get("released_by") and entry.get("status") == "succeeded"
    }


def overlap_skipped(entries: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Scheduled times the ledger records skipped by the overlap policy (not missed: held back)."""
    return {moment for moment, entry in entries.items() if _skipped_by_overlap(entry)}


def _skipped_by_overlap(entry: Mapping[str, Any]) -> bool:
    return entry.get("status") == "skipped" and str(entry.get("reason") or "").startswith("overlap: ")


def _said(entry: Mapping[str, Any]) -> str:
    if not entry:
        return "nothing (no entry)"
    reason = f" ({entry['reason']})" if entry.get("reason") else ""
    return f"{entry.get('status')}{reason}"
