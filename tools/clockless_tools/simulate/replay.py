"""One replay of the simulator, in a process of its own: `python -m clockless_tools.simulate.replay SPEC OUT`.

Each replay gets a fresh interpreter because handlers cache what they build on first use
(settings and stores behind `functools.cache`, the kit's persistence layer, PynamoDB connections
bound to the endpoint they were made for), and moto keeps its tables in module-level state: a
second server in the same process would share the first one's tables and be reached through the
first one's clients. A process per replay needs no knowledge of any of those caches, so a cache
added tomorrow cannot make the comparison lie.

Two roles, told apart by SPEC:
- the simulation delivers SPEC's tick plans; it announces on stdout where it wrote the seeded
  tables (`{"before": path}`) and each tick as soon as it first took effect (`{"took_effect": ...}`);
- the reference (`"stream": true`) reads commands on stdin as they come: `{"load": path}`, then
  `{"plan": ...}` per tick to deliver right away, then `{"end": true}`. So it runs alongside the
  simulation instead of after it.
Both write progress as JSON lines on stdout, the functions' own output to SPEC's log file, and the
tables (before and after) and every delivery to OUT.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import time_machine

from clockless_tools.local.capacity import capacity_settings, describe_settings, describe_throttling
from clockless_tools.local.data_loader import share_data_loader
from clockless_tools.local.dynamodb import (
    EmbeddedDynamoDB,
    create_tables,
    dynamodb_client,
    local_environment,
    patched_environ,
)
from clockless_tools.local.in_process import served_in_process
from clockless_tools.local.moto_expressions import expressions_evaluated_cheaply
from clockless_tools.local.moto_serializer import attribute_values_read_directly
from clockless_tools.local.moto_transactions import transactions_snapshot_touched_items
from clockless_tools.local.poller import SqsPoller
from clockless_tools.local.queues import create_queues, queue_url, sqs_client
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.seed import SeedPlan, describe, plant_bad_rows, seed_jobs
from clockless_tools.simulate import index_keys
from clockless_tools.simulate.bad_rows import planted_summary
from clockless_tools.simulate.engine import DeliveryEngine, DeliveryRecord
from clockless_tools.simulate.faults import FaultInjector
from clockless_tools.simulate.plan import TickPlan
from clockless_tools.simulate.slow_night import policies_in_force
from clockless_tools.simulate.snapshot import Snapshot, dump_tables, load_tables
from clockless_tools.simulate.workers import WorkerDriver
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template


def send(channel: TextIO, **message: Any) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


@contextlib.contextmanager
def _dynamodb(endpoint: str | None) -> Iterator[tuple[str, EmbeddedDynamoDB | None]]:
    if endpoint is not None:
        yield endpoint, None
        return
    # Not stopped: the process ends with the replay, and a clean shutdown would wait out the
    # server's half-second poll for nothing. Its thread is a daemon. Its requests come from this
    # process, so they reach it without a socket, its transactions copy only what they touch, and
    # its UpdateExpressions are parsed once and its attribute values serialized directly: the same
    # answers, at a fraction of the CPU (see the modules).
    server = EmbeddedDynamoDB().start()
    with (
        served_in_process(server.endpoint, server.app),
        transactions_snapshot_touched_items(),
        expressions_evaluated_cheaply(),
        attribute_values_read_directly(),
    ):
        yield server.endpoint, server


class _Clock:
    """time-machine started on the first move, so a streamed replay needs no start time up front."""

    def __init__(self) -> None:
        self._travel: time_machine.travel | None = None
        self._coordinates: time_machine.Traveller | None = None

    def move_to(self, destination: datetime, tick: bool | None = None) -> None:
        if self._coordinates is None:
            self._travel = time_machine.travel(destination, tick=False)
            self._coordinates = self._travel.start()
        self._coordinates.move_to(destination, tick=tick)

    def stop(self) -> None:
        if self._travel is not None:
            self._travel.stop()


def replay(spec: Mapping[str, Any], channel: TextIO, commands: TextIO) -> dict[str, Any]:
    """Carry out one replay as SPEC describes (see the module's docstring)."""
    template = Template.load(spec["template"])
    names = LocalNames()
    with _dynamodb(spec.get("endpoint")) as (endpoint, server), patched_environ(local_environment(endpoint)):
        if spec.get("endpoint") is None:
            send(channel, note=f"embedded DynamoDB on {endpoint}")
        tables = create_tables(template, endpoint, names)
        create_queues(template, endpoint, names)
        client = dynamodb_client(endpoint)
        runtime = LocalLambdaRuntime(template, endpoint, names)
        seeded, without_demo = _seed(runtime, spec.get("seed"), spec.get("keys_per_partition"))
        if seeded:
            send(channel, note=f"seeded {seeded}")
        # Planted before the seeded tables are dumped: the reference meets the very same rows.
        bad_rows = _plant(runtime, spec["seed"]) if spec.get("bad_rows") and spec.get("seed") else None
        if bad_rows is not None:
            send(channel, note=f"bad rows planted: {planted_summary(bad_rows)}")
        before = dump_tables(client, tables)
        if spec.get("before_path"):
            Path(spec["before_path"]).write_text(json.dumps(before), encoding="utf-8")
            send(channel, before=spec["before_path"])
        capacity = None
        if server is not None and spec.get("capacity"):
            # Enforced once the seeded tables are loaded: seeding is not part of the night.
            settings = capacity_settings(spec["capacity"]["start"], float(spec["capacity"]["scale"]))
            capacity = server.enforce(settings)
            send(channel, note=f"DynamoDB write throughput enforced: {describe_settings(settings)}")
        injector = FaultInjector(spared_tables=spec["spared_tables"])
        workers = WorkerDriver(runtime, endpoint, injector, seed=str(spec.get("worker_seed", "")), names=names)
        slow = spec.get("slow_night")
        policies = policies_in_force(template, runtime, slow and slow.get("overlap"))
        if slow:
            workers.slow_down({job: timedelta(seconds=seconds) for job, seconds in slow["lags"].items()})
            send(channel, note=f"slow night: workers lag {_lags(slow['lags'])}; overlap {_policies(policies)}")
        clock = _Clock()
        expected = spec.get("expected")
        engine = DeliveryEngine(
            template,
            runtime,
            injector,
            clock,
            # The reference's rounds are its ticks (each delivered once), a total known up front; the
            # simulation's progress is the ticks it announces as they take effect.
            progress=(lambda done, _queued: send(channel, done=done, total=expected)) if expected else _quiet,
            took_effect=lambda plan, record: send(channel, took_effect=plan.key, at=record.at, round=record.round),
            skipped=lambda plan: send(channel, skipped=plan.key),
            workers=workers,
        )
        try:
            with injector.installed():
                if spec.get("stream"):
                    records, before = _stream(engine, commands, client, channel, before)
                else:
                    records = engine.run([TickPlan.from_dict(plan) for plan in spec["plans"]])
        finally:
            clock.stop()
        if capacity is not None:
            send(channel, note=describe_throttling(capacity))
            server.enforce(None)  # type: ignore[union-attr]
        after = dump_tables(client, tables)
        dead_letters = dead_letter_depths(workers.poller)
        dead_letter_bodies = dead_letter_messages(workers.poller) if spec.get("bad_rows") else {}
    return {
        "endpoint": endpoint,
        "seeded": seeded,
        "without_demo": without_demo,
        "before": before,
        "after": after,
        "records": [asdict(record) for record in records],
        "workers": [asdict(record) for record in engine.worker_records],
        "dead_letters": dead_letters,
        "overlap": policies,
        "bad_rows": bad_rows,
        "dead_letter_bodies": dead_letter_bodies,
    }


def _lags(lags: Mapping[str, float]) -> str:
    return ", ".join(f"{job} {seconds / 3600:g} h" for job, seconds in lags.items()) or "(no job fans out)"


def _policies(policies: Mapping[str, str]) -> str:
    return ", ".join(f"{job} {policy}" for job, policy in policies.items())


def _quiet(_done: int, _queued: int) -> None:
    return None


def dead_letter_depths(poller: SqsPoller) -> dict[str, int]:
    """Messages in each polled queue's dead-letter queue (visible or not), by the work queue."""
    client = sqs_client(poller.endpoint)
    depths = {}
    for source in poller.sources:
        if source.queue.dead_letter_queue is None:
            continue
        attributes = client.get_queue_attributes(
            QueueUrl=queue_url(client, source.queue.dead_letter_queue),
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        depths[source.queue.logical_id] = sum(int(value) for value in attributes.values())
    return depths


def dead_letter_messages(poller: SqsPoller) -> dict[str, list[str]]:
    """The bodies of the messages in each polled queue's dead-letter queue, by the work queue. Read
    once the night is over: each is received and left to come back (nothing reads them after)."""
    client = sqs_client(poller.endpoint)
    bodies: dict[str, list[str]] = {}
    for source in poller.sources:
        if source.queue.dead_letter_queue is None:
            continue
        url = queue_url(client, source.queue.dead_letter_queue)
        found = bodies.setdefault(source.queue.logical_id, [])
        while messages := client.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600, WaitTimeSeconds=0
        ).get("Messages", []):
            found.extend(str(message["Body"]) for message in messages)
    return bodies


def _plant(runtime: LocalLambdaRuntime, seed: Mapping[str, Any]) -> dict[str, list[str] | None]:
    return plant_bad_rows(runtime, start=datetime.fromisoformat(seed["start"]), end=datetime.fromisoformat(seed["end"]))


def _seed(
    runtime: LocalLambdaRuntime, seed: Mapping[str, Any] | None, keys_per_partition: int | None
) -> tuple[str | None, list[str]]:
    """What was seeded (one line) and the jobs without demo data; first, in both replays, the jobs
    set to their index keys per partition (`clockless_tools.simulate.index_keys`)."""
    keys = index_keys.apply(keys_per_partition)
    if not seed:
        return None, []
    plan = SeedPlan(**seed["plan"])
    seeded = seed_jobs(
        runtime, plan, start=datetime.fromisoformat(seed["start"]), end=datetime.fromisoformat(seed["end"])
    )
    said = describe(seeded, plan)
    if said is not None and keys is not None:
        said = f"{said}; {keys}"
    return said, [job.job for job in seeded if job.summary is None]


def _stream(
    engine: DeliveryEngine, commands: TextIO, client: Any, channel: TextIO, before: Snapshot
) -> tuple[list[DeliveryRecord], Snapshot]:
    records: list[DeliveryRecord] = []
    for line in commands:
        command = json.loads(line)
        if "load" in command:
            before = json.loads(Path(command["load"]).read_text(encoding="utf-8"))
            send(channel, note=f"loaded {load_tables(client, before)} items: a fresh copy of the seeded tables")
        elif "plan" in command:
            records.extend(engine.run([TickPlan.from_dict(command["plan"])]))
        elif command.get("end"):
            break
    return records, before


def main(argv: list[str] | None = None) -> int:
    spec_path, out_path = argv if argv is not None else sys.argv[1:]
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    # One process hosts every function's execution environments, each of which makes its own
    # botocore sessions (again whenever the function running changes): they share one data loader.
    share_data_loader()
    channel, commands = sys.stdout, sys.stdin
    log_path = Path(spec["log"])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # Handlers log and emit metrics to stdout, as in Lambda. The redirect is in place before any
    # handler is imported, because Powertools binds its stream when a logger is created.
    with log_path.open("a", encoding="utf-8") as log, contextlib.redirect_stdout(log):
        result = replay(spec, channel, commands)
    Path(out_path).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    # A crash is a traceback on stderr and a non-zero exit, which the simulator reports.
    code = main()
    # Leave without the interpreter's teardown: the embedded server's request threads would hold
    # the exit until their keep-alive connections time out, about a second, and nothing is left
    # to clean up (OUT is written and closed).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
