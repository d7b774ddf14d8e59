"""`clockless simulate`: the two replays, each in its own process, and the report built from them.

1. the simulation: the seeded tables (or an already running DynamoDB), every tick delivered by
   the seeded plan in `clockless_tools.simulate.engine` (duplicates, concurrent copies, failures and
   retries, late deliveries);
2. the reference: a fresh copy of the same seeded tables, each tick delivered exactly once, at
   the simulated time and in the order its work was done in the simulation.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from clockless_tools.local.seed import SeedPlan
from clockless_tools.simulate.bad_rows import distinct_letters
from clockless_tools.simulate.engine import DeliveryRecord
from clockless_tools.simulate.plan import delivered_once, plan_deliveries
from clockless_tools.simulate.report import SimulationReport, build_report
from clockless_tools.simulate.request import Note, Progress, SimulationError, SimulationRequest
from clockless_tools.simulate.slow_night import worker_lags
from clockless_tools.simulate.tables import bookkeeping_tables
from clockless_tools.simulate.workers import WorkerRecord
from clockless_tools.template.intrinsics import LocalNames


class _Replay:
    """A replay process: SPEC in a file, commands on stdin, JSON lines on stdout, result in a file."""

    def __init__(self, name: str, spec: dict[str, Any], workdir: Path) -> None:
        self.name = name
        spec_path, self.out_path, self.err_path = (workdir / f"{name}.{s}" for s in ("spec.json", "out.json", "err"))
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        with self.err_path.open("w", encoding="utf-8") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "clockless_tools.simulate.replay", str(spec_path), str(self.out_path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )

    def messages(self) -> Iterator[dict[str, Any]]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            yield json.loads(line)

    def command(self, **command: Any) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it stopped; result() reports why

    def result(self) -> dict[str, Any]:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        code = self.process.wait()
        if code != 0:
            tail = self.err_path.read_text(encoding="utf-8").strip().splitlines()[-12:]
            raise SimulationError(f"the {self.name} replay stopped with exit code {code}:\n" + "\n".join(tail))
        return json.loads(self.out_path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _follow(replay: _Replay, progress: Progress, note: Note) -> None:
    for message in replay.messages():
        if "note" in message:
            note(f"{replay.name}: {message['note']}")
        elif "done" in message:
            # The reference delivers each tick once, one round each: rounds done are ticks done.
            progress(replay.name, int(message["done"]), int(message["total"]))


def run_simulation(
    request: SimulationRequest,
    *,
    progress: Progress = lambda _name, _done, _total: None,
    note: Note = lambda _message: None,
) -> SimulationReport:
    """Run the simulation and, alongside it, the reference replay; compare their tables; report per job."""
    template = request.template
    ticks = request.validate()
    names = LocalNames()
    plans = plan_deliveries(template, ticks, seed=request.seed, dropped=set(request.drops))
    by_key = {plan.key: plan for plan in plans}
    for log in (request.log_path, reference_log(request.log_path)):
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("", encoding="utf-8")
    common = {
        "template": str(template.path),
        "worker_seed": str(request.seed),
        "spared_tables": sorted(names.table_name(table) for table in bookkeeping_tables(template)),
        # both replays, so the reference reads the keys the simulation's seeding wrote
        "keys_per_partition": request.replayed_keys_per_partition,
    }
    with tempfile.TemporaryDirectory(prefix="clockless-simulate-") as tmp:
        workdir = Path(tmp)
        simulation = _Replay(
            "simulation",
            {
                **common,
                "log": str(request.log_path),
                "endpoint": request.endpoint,
                "seed": None if request.endpoint else _seed_spec(request),
                "capacity": None if request.capacity is None else {"start": request.capacity, "scale": request.scale},
                "before_path": str(workdir / "before.json"),
                "plans": [plan.as_dict() for plan in plans],
                "slow_night": _slow_night_spec(request, ticks),
                "bad_rows": request.bad_rows,
            },
            workdir,
        )
        reference = _Replay(
            "reference",
            {
                **common,
                "log": str(reference_log(request.log_path)),
                "stream": True,
                "expected": len(plans),
                # Its dead letters read too, to compare letters rather than copies (simulate.bad_rows).
                "bad_rows": request.bad_rows,
            },
            workdir,
        )
        follower = threading.Thread(target=_follow, args=(reference, progress, note), daemon=True)
        follower.start()
        try:
            forwarded: set[str] = set()
            # Ticks the simulation's overlap policy skipped: the reference never delivers them.
            skipped: set[str] = set()
            for message in simulation.messages():
                if "before" in message:
                    reference.command(load=message["before"])
                elif "took_effect" in message:
                    # Each tick once, in the order its work was first done in the simulation (a
                    # job may build on the tick before), but at its scheduled time: the clean, on-time
                    # delivery. A job that decides from the wall clock instead of its tick then
                    # decides differently here than in the simulation's late or retried delivery,
                    # and the tables say so (docs/simulation.md; rule no-wall-clock).
                    plan = by_key[message["took_effect"]]
                    reference.command(
                        plan=delivered_once(plan, at=plan.scheduled_time, order=int(message["round"])).as_dict()
                    )
                    forwarded.add(plan.key)
                    # Ticks done of a total known up front (rounds are not: failures add retries).
                    progress("simulation", len(forwarded) + len(skipped), len(plans))
                elif "skipped" in message:
                    skipped.add(message["skipped"])
                    progress("simulation", len(forwarded) + len(skipped), len(plans))
                elif "note" in message:
                    note(f"simulation: {message['note']}")
            simulated = simulation.result()
            # Ticks that never took effect in the simulation: the reference still delivers them once.
            for plan in plans:
                if plan.key not in forwarded and plan.key not in skipped:
                    reference.command(
                        plan=delivered_once(plan, at=plan.scheduled_time, order=len(plans) + plan.order).as_dict()
                    )
            reference.command(end=True)
            referenced = reference.result()
            follower.join()
            progress("simulation", len(forwarded), len(plans))
        finally:
            simulation.kill()
            reference.kill()
    return build_report(
        request,
        ticks,
        plans,
        [DeliveryRecord(**record) for record in simulated["records"]],
        [DeliveryRecord(**record) for record in referenced["records"]],
        before=simulated["before"],
        after=simulated["after"],
        reference_after=referenced["after"],
        seeded=simulated["seeded"],
        without_demo=simulated["without_demo"],
        workers=[WorkerRecord(**record) for record in simulated["workers"]],
        dead_letters=_dead_letters(simulated, bad_rows=request.bad_rows),
        reference_dead_letters=_dead_letters(referenced, bad_rows=request.bad_rows),
        overlap=simulated["overlap"],
        bad_rows=simulated["bad_rows"],
        dead_letter_bodies=[body for bodies in simulated["dead_letter_bodies"].values() for body in bodies],
    )


def _dead_letters(result: Mapping[str, Any], *, bad_rows: bool) -> dict[str, int]:
    """Messages in each work queue's dead-letter queue; on a night with bad rows, its distinct letters."""
    return distinct_letters(result["dead_letter_bodies"]) if bad_rows else dict(result["dead_letters"])


def _slow_night_spec(request: SimulationRequest, ticks: Mapping[str, list[datetime]]) -> dict[str, Any] | None:
    if not request.slow_night:
        return None
    lags = worker_lags(request.template, ticks)
    return {"lags": {job: lag.total_seconds() for job, lag in lags.items()}, "overlap": request.overlap}


def _seed_spec(request: SimulationRequest) -> dict[str, Any]:
    return {
        "plan": asdict(SeedPlan(**{**asdict(request.seed_plan), "seed": request.seed})),
        "start": request.start.isoformat(),
        "end": request.end.isoformat(),
    }


def reference_log(log_path: Path) -> Path:
    return log_path.with_name(log_path.stem + "-reference" + log_path.suffix)
