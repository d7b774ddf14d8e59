"""The work queue's messages: a partition to run (or go on with), failed items to replay, or a tick
to start.

A body that is not one of them is a `MalformedMessageError` naming the field; the worker
reports it as a batch item failure, so after maxReceiveCount it rests in the work DLQ. A body of
a kind an earlier release sent and this one no longer runs is a `RetiredMessageError`, which the
worker acknowledges.

Every body carries its format's `version` (docs/fan-out.md#versions-a-deploy-in-the-middle-of-a-tick):
a deploy updates the coordinator and the workers one at a time while the queue keeps its messages,
so a worker may receive a body written by older or newer code. It reads the versions in
`READABLE_VERSIONS` (a body without one was queued before versions existed: version 1, the same
format); any other is an `UnreadableMessageError`, which names the tick and partition the body
says (its envelope, whose fields keep their meaning in every version), so the message's last
receive can fail the partition by name in the ledger rather than leave its tick `started`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from clockless.errors import ClocklessError
from clockless.tick import MalformedTickError, Trigger, describe, format_scheduled_time, parse_tick_time


class MessageKind(StrEnum):
    """A work message's `kind`, as its body says it."""

    PARTITION = "partition"
    ITEMS = "items"
    # A tick buffered by the job's overlap policy, to start now that the tick before it is settled
    # (clockless.overlap); its `partition` is empty and `params` name the settled tick.
    START = "start"


KIND_PARTITION: Final = MessageKind.PARTITION
KIND_ITEMS: Final = MessageKind.ITEMS
KIND_START: Final = MessageKind.START
KINDS: Final = tuple(kind.value for kind in MessageKind)
# Sent by earlier releases, run by none now: `watch`, the watch over a message's last receives (the
# tick reaper settles a stuck tick instead: clockless.reaper). One still queued at a deploy is
# acknowledged, with a log line.
RETIRED_KINDS: Final = ("watch",)
MAX_HOPS: Final = 100_000
MAX_ERROR_LENGTH: Final = 200
# The format this code writes, and the ones it reads. A change an older worker would misread (a
# field whose meaning changes, one it must not ignore) is a new version, read beside the old one
# for a deploy at least, before a later deploy writes it (docs/fan-out.md); a field an older
# worker may safely ignore is not.
VERSION: Final = 1
READABLE_VERSIONS: Final = frozenset({VERSION})


class MalformedMessageError(ClocklessError, ValueError):
    """A work queue message this worker cannot run; nothing was written."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"malformed work message: field '{field}' {problem}")
        self.field = field


class RetiredMessageError(ClocklessError):
    """A work queue message of a kind an earlier release sent and this one no longer runs."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"a {kind!r} message, a kind an earlier release sent: nothing to do")
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Envelope:
    """What every version of a body says the same way: which tick and partition it is for."""

    kind: str
    job: str
    scheduled_time: datetime
    trigger: Trigger
    partition: str


class UnreadableMessageError(MalformedMessageError):
    """A body this worker cannot read, though it names its tick (`envelope`): written by code of
    another version, or for a partition this worker does not run (the shard count changed between
    the coordinator and the worker). Nothing was written; on its last receive the worker names the
    partition in the ledger (clockless.fanout.unreadable)."""

    def __init__(self, field: str, problem: str, envelope: Envelope) -> None:
        super().__init__(field, problem)
        self.envelope = envelope


@dataclass(frozen=True, slots=True)
class WorkMessage:
    kind: MessageKind
    job: str
    scheduled_time: datetime
    trigger: Trigger
    partition: str
    params: dict[str, Any]
    hop: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    # An items message: the failed items' keys (a row that did not decode has a key, not an item)
    # and what failed each (clockless.items.FailedItem records), for the operator reading the DLQ.
    keys: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    version: int = VERSION

    @property
    def time_text(self) -> str:
        return format_scheduled_time(self.scheduled_time)

    @property
    def tick_key(self) -> str:
        return f"{self.job}@{self.time_text}"

    def continuation(self) -> WorkMessage:
        return WorkMessage(
            KIND_PARTITION, self.job, self.scheduled_time, self.trigger, self.partition, self.params, self.hop + 1
        )

    def failed_items(
        self,
        items: list[dict[str, Any]],
        error: str,
        *,
        keys: list[str] | None = None,
        failures: list[dict[str, Any]] | None = None,
    ) -> WorkMessage:
        return WorkMessage(
            KIND_ITEMS,
            self.job,
            self.scheduled_time,
            self.trigger,
            self.partition,
            self.params,
            items=items,
            error=error[:MAX_ERROR_LENGTH],
            keys=list(keys or []),
            failures=list(failures or []),
        )

    def replayed_keys(self) -> list[str] | None:
        """The keys an items message replays; None: an older message that names only its items."""
        return list(self.keys) if self.keys else None

    def body(self) -> str:
        data: dict[str, Any] = {
            "version": self.version,
            "kind": self.kind.value,
            "job": self.job,
            "scheduled_time": self.time_text,
            "trigger": self.trigger.value,
            "partition": self.partition,
            "params": self.params,
        }
        if self.kind == KIND_PARTITION:
            data["hop"] = self.hop
        else:
            data["items"] = self.items
            data["error"] = self.error
            if self.keys:
                data["keys"] = self.keys
            if self.failures:
                data["failures"] = self.failures
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def parse(
        cls,
        body: str,
        *,
        job: str,
        partitions: Collection[str],
        versions: Collection[int] = READABLE_VERSIONS,
    ) -> WorkMessage:
        """The message `body` says, for a worker of `job` running `partitions` that reads `versions`."""
        try:
            data = json.loads(body)
        except (TypeError, ValueError) as error:
            raise MalformedMessageError("<body>", f"is not JSON: {error}") from None
        if not isinstance(data, Mapping):
            raise MalformedMessageError("<body>", f"must be a JSON object, got {describe(data)}")
        version = _version(data)
        kind = data.get("kind")
        if kind in RETIRED_KINDS:
            raise RetiredMessageError(kind)
        if kind not in KINDS and version in versions:
            raise MalformedMessageError("kind", f"must be one of {', '.join(KINDS)}, got {describe(kind)}")
        if data.get("job") != job:
            raise MalformedMessageError("job", f"names {describe(data.get('job'))}, but this worker runs {job!r}")
        try:
            scheduled_time = parse_tick_time(data.get("scheduled_time"))  # type: ignore[arg-type]
        except MalformedTickError as error:
            raise MalformedMessageError("scheduled_time", error.problem) from None
        trigger_text = data.get("trigger", Trigger.SCHEDULE.value)
        if not isinstance(trigger_text, str) or trigger_text not in Trigger._value2member_map_:
            raise MalformedMessageError("trigger", f"must be one of {', '.join(Trigger)}, got {describe(trigger_text)}")
        trigger = Trigger(trigger_text)
        partition = data.get("partition")
        if not isinstance(partition, str):
            raise MalformedMessageError("partition", f"must be a string, got {describe(partition)}")
        envelope = Envelope(str(kind), job, scheduled_time, trigger, partition)
        if version not in versions:
            readable = ", ".join(str(v) for v in sorted(versions))
            raise UnreadableMessageError(
                "version", f"is {version}, which this worker cannot read (it reads {readable})", envelope
            )
        _check_partition(envelope, partitions)
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise MalformedMessageError("params", f"must be a JSON object, got {describe(params)}")
        hop = data.get("hop", 0)
        if isinstance(hop, bool) or not isinstance(hop, int) or not 0 <= hop <= MAX_HOPS:
            raise MalformedMessageError("hop", f"must be an integer from 0 to {MAX_HOPS}, got {describe(hop)}")
        if kind != KIND_ITEMS:
            return cls(MessageKind(str(kind)), job, scheduled_time, trigger, partition, params, hop, version=version)
        items, keys, failures = _items(data)
        reason = str(data.get("error", ""))[:MAX_ERROR_LENGTH]
        return cls(
            KIND_ITEMS,
            job,
            scheduled_time,
            trigger,
            partition,
            params,
            hop,
            items,
            reason,
            keys,
            failures,
            version=version,
        )


def _version(data: Mapping[str, Any]) -> int:
    version = data.get("version", 1)  # a body queued before versions existed
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise MalformedMessageError("version", f"must be a positive integer, got {describe(version)}")
    return version


def _check_partition(envelope: Envelope, partitions: Collection[str]) -> None:
    partition = envelope.partition
    if envelope.kind == KIND_START and partition == "":
        return
    if partition not in partitions:
        problem = f"must be one of this job's {len(partitions)} partitions, got {describe(partition)}"
        if envelope.kind == KIND_PARTITION and partition:
            # A coordinator with more shards than this worker (a deploy between them) sent it.
            raise UnreadableMessageError("partition", problem, envelope)
        raise MalformedMessageError("partition", problem)


def _items(data: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    keys = data.get("keys", [])
    if not isinstance(keys, list) or not all(isinstance(key, str) and key for key in keys):
        raise MalformedMessageError("keys", f"must be an array of non-empty strings, got {describe(keys)}")
    items = data.get("items")
    if not isinstance(items, list) or not (items or keys):
        raise MalformedMessageError("items", f"must be a non-empty array, got {describe(items)}")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise MalformedMessageError(f"items[{index}]", f"must be a JSON object, got {describe(item)}")
    failures = data.get("failures", [])
    if not isinstance(failures, list) or not all(isinstance(f, dict) for f in failures):
        raise MalformedMessageError("failures", f"must be an array of JSON objects, got {describe(failures)}")
    return items, keys, failures
