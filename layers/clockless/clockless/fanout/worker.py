"""A warm worker's collaborators, and what each delivery builds from them.

Made once and kept across its invocations: the job and its partitions, the settings, the clients,
the clock, the pacer of each partition it ran and the job's `PartitionWork`. Built per delivery:
the partition's records, the hand-off of a continuation, the sink of failed items.

The dispatcher (`clockless.fanout.dispatcher`) hands one to the module of each message kind;
none of them holds state of its own between deliveries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.config import Config

from clockless.config import CLIENT_ENVIRONMENT, PerEnvironment
from clockless.fanout.continuation import HandOff
from clockless.fanout.failures import FailureRecorder
from clockless.fanout.messages import READABLE_VERSIONS
from clockless.fanout.pacing import Pacer
from clockless.fanout.queue import DeadLetters, WorkQueue
from clockless.fanout.retry import FINAL_MARGIN_SECONDS, HAND_ON_MARGIN_SECONDS
from clockless.fanout.settings import WorkerSettings
from clockless.fanout.store import PartitionStore
from clockless.fanout.types import Counters
from clockless.items import NO_TOLERANCE, Tolerance
from clockless.throttle import SYSTEM_CLOCK, Budget, Clock, ThrottleRetryingClient

if TYPE_CHECKING:
    from clockless.fanout.messages import WorkMessage
    from clockless.fanout.work import PartitionWork
    from clockless.job import ScheduledJob


class PartitionWorker:
    def __init__(
        self,
        job: ScheduledJob,
        partitions: Sequence[str],
        work: Callable[[], PartitionWork[Any]],
        *,
        tolerance: Tolerance = NO_TOLERANCE,
    ) -> None:
        self.job = job
        self.partitions = tuple(partitions)
        # How many failed items a tick may have and still succeed (clockless.items).
        self.tolerance = tolerance
        self._work_factory = work
        self._work: PartitionWork[Any] | None = None
        self._settings = PerEnvironment(WorkerSettings.from_env)
        self._clients = PerEnvironment(self._make_clients, CLIENT_ENVIRONMENT)
        self._lock = threading.Lock()
        # Waits (throttle backoff, pacing) and the time budget are measured on this clock: tests
        # and the simulator set their own.
        self.clock: Clock = SYSTEM_CLOCK
        # The message versions this code reads (clockless.fanout.messages); the deploy sweep sets
        # an older worker's.
        self.versions: frozenset[int] = READABLE_VERSIONS
        # The adaptive rate of each partition this warm worker ran, kept across its invocations.
        self._pacers: dict[str, Pacer] = {}
        # Tests and the bench read what the last run did.
        self.last_counters = Counters()

    # ------------------------------------------------------------------------- collaborators
    def settings(self) -> WorkerSettings:
        return self._settings.get()

    def clients(self) -> tuple[Any, Any]:
        """(dynamodb, sqs), made on first use; the pool fits every lane's transaction at once."""
        return self._clients.get()

    def _make_clients(self) -> tuple[Any, Any]:
        import boto3  # noqa: PLC0415 - the handler's import stays free of clients

        pool = Config(max_pool_connections=max(10, self.settings().concurrency + 2))
        return boto3.client("dynamodb", config=pool), boto3.client("sqs")

    def work(self) -> PartitionWork[Any]:
        with self._lock:
            if self._work is None:
                self._work = self._work_factory()
            return self._work

    def pacer(self, partition: str) -> Pacer:
        """The partition's adaptive rate, kept by this warm worker (a new one for a new clock, or for
        pacing settings changed since it was made: a warm worker follows its environment)."""
        pacing = self.settings().pacing()
        with self._lock:
            pacer = self._pacers.get(partition)
            if pacer is None or pacer.clock is not self.clock or pacer.settings != pacing:
                pacer = self._pacers[partition] = Pacer(pacing, self.clock)
            return pacer

    # ---------------------------------------------------------------------- per delivery
    def partition_records(self, message: WorkMessage, owner: str, budget: Budget) -> PartitionStore:
        """The partition's records, written through a client that waits out throttles within `budget`."""
        settings = self.settings()
        return PartitionStore(
            client=ThrottleRetryingClient(self.clients()[0], budget),
            table=settings.ledger_table,
            job=message.job,
            scheduled_time=message.time_text,
            partition=message.partition,
            owner=owner,
            retention_seconds=settings.ledger_retention_seconds,
        )

    def final_records(self, message: WorkMessage, owner: str, budget: Budget) -> PartitionStore:
        """The same records for a run's last writes, which may wait out throttles past the time
        budget, until FINAL_MARGIN_SECONDS before the attempt's end."""
        return self.partition_records(message, owner, budget.with_margin(FINAL_MARGIN_SECONDS))

    def final_client(self, budget: Budget) -> Any:
        """The DynamoDB client of a delivery's last writes (the finisher's), throttles waited out
        until FINAL_MARGIN_SECONDS before the attempt's end."""
        return ThrottleRetryingClient(self.clients()[0], budget.with_margin(FINAL_MARGIN_SECONDS))

    def work_queue(self) -> WorkQueue:
        return WorkQueue(self.clients()[1], self.settings().work_queue_url)

    def handoff(self, budget: Budget) -> HandOff:
        """Continuations sent while the attempt has time, throttles waited out."""
        return HandOff(self.work_queue(), budget.with_margin(HAND_ON_MARGIN_SECONDS))

    def failure_recorder(self, message: WorkMessage, records: PartitionStore, budget: Budget) -> FailureRecorder:
        """Where a run's or a replay's failed items go: the work DLQ, an ERROR line each, the record."""
        queue = DeadLetters(
            self.clients()[1], self.settings().dead_letter_queue_url, budget.with_margin(HAND_ON_MARGIN_SECONDS)
        )
        return FailureRecorder(message, self.work(), queue, records, self.job.logger)
