"""A capacity-faithful embedded DynamoDB: DynamoDB's throughput rules enforced in front of moto
(which has no partitions and no limits), scaled so a laptop can run them.

The rules, each from AWS's own pages:

- **physical partitions** (`clockless_tools.local.partitions`, which cites its pages): every
  table and every global secondary index has as many partitions as its throughput and size need
  at 1,000 write units, 3,000 read units and 10 GB each; key values are placed on them by hash;
  each partition has a write bucket and a read bucket of its own, so distinct key values that
  land on one partition share its 1,000 write units per second ("Key range throughput exceeded
  (hot partitions)", tables and GSIs alike). Split for heat is a declared option
  (`split_after_seconds`): AWS says adaptive capacity *may* split a hot partition;
- **a table's and each GSI's on-demand start**: a new on-demand table or index serves up to
  4,000 write and 12,000 read request units per second ("DynamoDB on-demand capacity mode",
  "Initial throughput and scaling properties"); a declared `WarmThroughput` starts it higher
  ("Understanding DynamoDB warm throughput"); a provisioned one serves what is provisioned;
- **growth from the previous peak**: on-demand serves up to double its previous peak at once;
  beyond that it "might" throttle when the peak is doubled within 30 minutes (re:Post "on-demand
  table throttling"). Here the ceiling is max(start, 2 x the highest second's consumption
  recorded at least `growth_seconds` (1,800) ago), and partitions are halved as it grows;
- **burst capacity**: up to 300 seconds of a table's or index's unused capacity is kept and may
  carry it past its rate, never a partition past its own ("DynamoDB burst and adaptive capacity");
- **the per-table quota**: 40,000 write and 40,000 read request units per second per on-demand
  table by default ("DynamoDB on-demand capacity mode", the note on throughput default quotas);
- **GSI back-pressure**: an index short of write capacity throttles the write to the base table
  (re:Post "dynamodb-gsi-throttling-table"; the guide's "Understanding GSI write throttling and
  back pressure");
- **what a refused request gets**: `TransactWriteItems` a `TransactionCanceledException` whose
  `CancellationReasons` carry `ThrottlingError` for the throttled actions and `None` for the
  others (the API reference's TransactionCanceledException, botocore's service model); a single
  request a `ProvisionedThroughputExceededException` with a `ThrottlingReasons` entry
  (`TableWriteKeyRangeThroughputExceeded`, `IndexWriteKeyRangeThroughputExceeded`, and the `Read`
  ones) for a hot partition and a `ThrottlingException` for a table or index above its current
  capacity ("Diagnosing throttling", API reference "ThrottlingReason"). A `BatchWriteItem` or
  `BatchGetItem` is admitted or refused whole (DynamoDB would hand back the throttled part as
  unprocessed).

Write units are the items' own, priced by `clockless_tools.local.units` from the items before
and after the write (a transaction's actions twice, index entries as they change); read units
from what the read returned (4 KB, halved for eventually consistent reads; a Scan is charged to
the table or index as a whole, `TransactGetItems` is not metered). moto applies the request first
(every DynamoDB request passes one at a time, see `SerializedDynamoDB`); a write the buckets
cannot admit is undone item by item and refused, so nobody sees it. A write whose table or key
partition is already empty is refused before moto applies it (`DynamoDBCapacity.probe`): the
same answer, without the machine's work of applying and undoing it, which would slow the
requests DynamoDB admits (its refusals do not). DynamoDB admits capacity before it evaluates a
condition, so a refused write's condition is not looked at either way.

**Scale**: every rate is divided by `scale`; time runs at its real speed. N items at scale S
meet the limits that N x S items meet on DynamoDB, in the same time.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clockless_tools.local.capacity_settings import (
    NEW_ON_DEMAND,
    PEAK_GROWTH_SECONDS,
    TABLE_QUOTA,
    CapacitySettings,
    Start,
    capacity_settings,
    describe_settings,
)
from clockless_tools.local.partitions import Resource, canonical
from clockless_tools.local.reads import READ_OPERATIONS, read_charges
from clockless_tools.local.units import (
    IndexShape,
    MotoTables,
    moto_dynamodb_backend,
    projected_entry,
    write_actions,
    write_units_of,
)

THROTTLING_MESSAGE: Final = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html."
)
__all__ = [
    "NEW_ON_DEMAND",
    "PEAK_GROWTH_SECONDS",
    "TABLE_QUOTA",
    "CapacitySettings",
    "DynamoDBCapacity",
    "Start",
    "capacity_settings",
    "describe_settings",
    "describe_throttling",
]
_ERROR_PREFIX: Final = "com.amazonaws.dynamodb.v20120810#"
_JSON: Final = "application/x-amz-json-1.0"


@dataclass
class Charge:
    """What one request costs, by where it lands."""

    # (resource, canonical key value) -> units; a key of None is the resource as a whole (a Scan)
    keys: defaultdict[tuple[str, str | None], float] = field(default_factory=lambda: defaultdict(float))
    resources: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # table or table/index
    # action index -> the resources it touches (a transaction's throttled actions are named)
    actions: dict[int, set[str]] = field(default_factory=dict)
    read: bool = False

    def add(self, action: int, resource: str, key: str | None, units: float) -> None:
        if units <= 0:
            return
        self.keys[(resource, key)] += units
        self.resources[resource] += units
        self.actions.setdefault(action, set()).add(resource)


@dataclass(frozen=True)
class Refusal:
    resource: str
    hot_key: bool  # a partition over its limit (else the table or index as a whole)
    read: bool = False


@dataclass
class CapacityStats:
    """What the emulator saw, for a report."""

    admitted: int = 0
    reads_admitted: int = 0
    throttled: Counter[str] = field(default_factory=Counter)  # by error code
    throttled_resources: Counter[str] = field(default_factory=Counter)
    hot_keys: Counter[str] = field(default_factory=Counter)  # resource whose partition was hot
    read_throttled: Counter[str] = field(default_factory=Counter)  # resource


class DynamoDBCapacity:
    """The buckets, and the decision for one request (called one request at a time)."""

    def __init__(
        self, settings: CapacitySettings, *, clock: Callable[[], float] = time.monotonic, backend: Any = None
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.stats = CapacityStats()
        self._tables = MotoTables(backend if backend is not None else moto_dynamodb_backend())
        self._resources: dict[str, Resource] = {}
        self._lock = threading.Lock()

    def consumed(self) -> dict[str, float]:
        """Write units admitted per table and "table/index", at DynamoDB's scale."""
        return {name: r.write.consumed * self.settings.scale for name, r in sorted(self._resources.items())}

    def read_consumed(self) -> dict[str, float]:
        """Read units admitted per table and "table/index", at DynamoDB's scale."""
        return {name: r.read.consumed * self.settings.scale for name, r in sorted(self._resources.items())}

    def peaks(self) -> dict[str, float]:
        """The highest second's write units per table and "table/index", at DynamoDB's scale."""
        return {name: r.write.peak * self.settings.scale for name, r in sorted(self._resources.items())}

    def partitions(self, *, keys: bool = False) -> dict[str, dict[str, Any]]:
        """Per table and "table/index": its partitions, splits, how many keys seen on each (with
        `keys`, the keys themselves), and the writes refused for each partition's heat."""
        return {
            name: {
                "partitions": len(r.ranges),
                "splits": r.splits,
                "keys_by_partition": {str(i): sorted(on) if keys else len(on) for i, on in sorted(r.loads().items())},
                "refusals_by_partition": {str(i): p.refused for i, p in enumerate(r.partitions) if p.refused},
            }
            for name, r in sorted(self._resources.items())
        }

    # ------------------------------------------------------------------------------ pricing
    def charge(self, operation: str, body: Mapping[str, Any], before: list[Any], ok: bool) -> Charge:
        """Units per key and per resource of a write moto has just answered (`ok`: applied)."""
        factor = 2 if operation == "TransactWriteItems" else 1
        charge = Charge()
        for position, ((kind, action), (table, key, old)) in enumerate(
            zip(write_actions(operation, body), before, strict=True)
        ):
            table_keys, indexes = self._tables.shape(table)
            new = self._tables.item(table, key) if ok else (action.get("Item") if kind == "Put" else old)
            if kind == "ConditionCheck":
                new = old
            # A single write whose condition failed still pays for the item; see `serve` for transactions.
            base = factor * write_units_of(old, new)
            charge.add(position, table, canonical(key[table_keys[0]]), base)
            if not ok or kind == "ConditionCheck":
                continue
            for index in indexes:
                resource = f"{table}/{index.name}"
                for entry_key, units in _index_writes(old, new, index, table_keys):
                    charge.add(position, resource, canonical(entry_key), units)
        return charge

    def touched(self, operation: str, body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
        """(table, key, item before) for each item the request writes."""
        found = []
        for kind, action in write_actions(operation, body):
            table = str(action["TableName"])
            key = self._tables.key_of(table, kind, action)
            found.append((table, key, self._tables.item(table, key)))
        return found

    def undo(self, before: Iterable[tuple[str, dict[str, Any], Any]]) -> None:
        for table, key, old in reversed(list(before)):
            self._tables.restore(table, key, old)

    # ------------------------------------------------------------------------------ admission
    def probe(self, before: list[Any]) -> Charge:
        """What a write certainly lands on before it is applied (`before`: `touched`'s answer,
        one per action): each item's table, and its key's partition there (a write costs at
        least one unit); its index entries and the units themselves are known only once moto
        has applied it."""
        probe = Charge()
        for position, (table, key, _old) in enumerate(before):
            table_keys, _ = self._tables.shape(table)
            probe.add(position, table, canonical(key[table_keys[0]]), 1.0)
        return probe

    def admit(self, charge: Charge, *, pay: bool = True) -> Refusal | None:
        """Take the charge from every bucket it touches, or refuse it (taking nothing); with
        `pay` False, only whether it would be refused (the units are not looked at)."""
        now = self.clock()
        read = charge.read
        with self._lock:
            for name in charge.resources:
                resource = self._resource(name, now)
                resource.sync(now)
                bucket = resource.read_bucket if read else resource.write_bucket
                if bucket.refill(now) <= 0:
                    return self._refused(Refusal(name, hot_key=False, read=read))
            for name, key in charge.keys:
                if key is None:
                    continue
                resource = self._resources[name]
                index = resource.place(key)
                partition = resource.partitions[index]
                if (partition.read if read else partition.write).refill(now) <= 0:
                    if not read:
                        resource.refused_on(index, now, self.settings.split_after_seconds)
                    return self._refused(Refusal(name, hot_key=True, read=read))
            if not pay:
                return None
            for (name, key), units in charge.keys.items():
                resource = self._resources[name]
                if key is not None:
                    partition = resource.partitions[resource.place(key)]
                    (partition.read if read else partition.write).level -= units
            for name, units in charge.resources.items():
                resource = self._resources[name]
                (resource.read_bucket if read else resource.write_bucket).level -= units
                (resource.read if read else resource.write).consume(units, now)
            if read:
                self.stats.reads_admitted += 1
            else:
                self.stats.admitted += 1
        return None

    def _resource(self, name: str, now: float) -> Resource:
        if name not in self._resources:
            self._resources[name] = Resource(name, self.settings.limits(name), now)
        return self._resources[name]

    def _refused(self, refusal: Refusal) -> Refusal:
        if refusal.read:
            self.stats.read_throttled[refusal.resource] += 1
            return refusal
        self.stats.throttled_resources[refusal.resource] += 1
        if refusal.hot_key:
            self.stats.hot_keys[refusal.resource] += 1
        return refusal

    # ------------------------------------------------------------------------------ WSGI
    def serve(
        self, environ: dict[str, Any], start_response: Callable[..., Any], app: Callable[..., Any]
    ) -> list[bytes]:
        """One DynamoDB request through moto, admitted or refused; called under the server's lock."""
        operation = str(environ.get("HTTP_X_AMZ_TARGET", "")).rsplit(".", 1)[-1]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if isinstance(body, dict) and operation in READ_OPERATIONS:
            return self._serve_read(operation, body, environ, start_response, app)
        if not isinstance(body, dict) or not write_actions(operation, body):
            return list(app(environ, start_response))
        try:
            before = self.touched(operation, body)
        except (KeyError, TypeError, LookupError):
            return list(app(environ, start_response))  # moto answers a malformed request itself
        return self._serve_write(operation, body, before, environ=environ, start_response=start_response, app=app)

    def _serve_write(
        self,
        operation: str,
        body: Mapping[str, Any],
        before: list[Any],
        *,
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        app: Callable[..., Any],
    ) -> list[bytes]:
        # Refused before moto applies it when a bucket it certainly lands on is empty: the same
        # answer as after applying it, without the work of applying and undoing it (on this
        # machine that work would slow every other request down, which DynamoDB's refusals do not).
        probe = self.probe(before)
        refusal = self.admit(probe, pay=False)
        if refusal is not None:
            return self._refuse(operation, probe, refusal, start_response)
        answered: list[Any] = []
        content = list(app(environ, _keep(answered)))
        ok = answered[0].startswith("200")
        if not ok and operation == "TransactWriteItems":
            start_response(*answered)
            return content  # cancelled by its own conditions: nothing written, nothing charged
        charge = self.charge(operation, body, before, ok)
        refusal = self.admit(charge)
        if refusal is None:
            start_response(*answered)
            return content
        if ok:
            self.undo(before)
        return self._refuse(operation, charge, refusal, start_response)

    def _serve_read(
        self,
        operation: str,
        body: Mapping[str, Any],
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        app: Callable[..., Any],
    ) -> list[bytes]:
        answered: list[Any] = []
        content = list(app(environ, _keep(answered)))
        if not answered[0].startswith("200"):
            start_response(*answered)
            return content
        try:
            response = json.loads(b"".join(content) or b"{}")
            charge = Charge(read=True)
            for resource, key, units in read_charges(operation, body, response, self._tables):
                charge.add(0, resource, None if key is None else canonical(key), units)
        except (KeyError, TypeError, LookupError, ValueError):
            start_response(*answered)
            return content
        refusal = self.admit(charge)
        if refusal is None:
            start_response(*answered)
            return content
        return self._refuse(operation, charge, refusal, start_response)

    def _refuse(
        self, operation: str, charge: Charge, refusal: Refusal, start_response: Callable[..., Any]
    ) -> list[bytes]:
        code, payload = _refusal_body(operation, charge, refusal)
        self.stats.throttled[code] += 1
        start_response("400 Bad Request", [("Content-Type", _JSON), ("x-amzn-ErrorType", code)])
        return [json.dumps(payload).encode()]


def _keep(answered: list[Any]) -> Callable[..., Callable[[bytes], None]]:
    """A start_response that keeps the status and headers for later."""

    def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        answered[:] = [status, headers]
        return lambda _data: None

    return keep


def _refusal_body(operation: str, charge: Charge, refusal: Refusal) -> tuple[str, dict[str, Any]]:
    index = "/" in refusal.resource
    if operation == "TransactWriteItems":
        reasons = []
        for position in range(1 + max(charge.actions, default=-1)):
            hit = refusal.resource in charge.actions.get(position, ())
            reasons.append({"Code": "ThrottlingError", "Message": THROTTLING_MESSAGE} if hit else {"Code": "None"})
        codes = ", ".join(reason["Code"] for reason in reasons)
        message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]"
        code = "TransactionCanceledException"
        return code, {"__type": _ERROR_PREFIX + code, "Message": message, "CancellationReasons": reasons}
    if refusal.hot_key:
        code = "ProvisionedThroughputExceededException"
        direction = "Read" if refusal.read else "Write"
        reason = f"{'Index' if index else 'Table'}{direction}KeyRangeThroughputExceeded"
        message = "The level of configured provisioned throughput for the table was exceeded."
    else:
        code, reason, message = "ThrottlingException", "", THROTTLING_MESSAGE
    payload: dict[str, Any] = {"__type": _ERROR_PREFIX + code, "message": message}
    if reason:
        payload["ThrottlingReasons"] = [{"reason": reason, "resource": _arn(refusal.resource)}]
    return code, payload


def _index_writes(old: Any, new: Any, index: IndexShape, table_keys: tuple[str, ...]) -> list[tuple[Any, int]]:
    """(index partition key value, units) of each index write an item change makes: a moved entry
    is a delete on its old key and a put on its new one."""
    before, after = projected_entry(old, index, table_keys), projected_entry(new, index, table_keys)
    if before == after:
        return []
    partition = index.keys[0]
    if before is not None and after is not None:
        if any(before.get(name) != after.get(name) for name in index.keys):
            return [(before[partition], write_units_of(before, None)), (after[partition], write_units_of(None, after))]
        return [(after[partition], write_units_of(before, after))]
    entry = after if after is not None else before
    assert entry is not None
    return [(entry[partition], write_units_of(before, after))]


def _arn(resource: str) -> str:
    from clockless_tools.template.intrinsics import LocalNames

    names = LocalNames()
    table, _, index = resource.partition("/")
    arn = f"arn:aws:dynamodb:{names.region}:{names.account_id}:table/{table}"
    return f"{arn}/index/{index}" if index else arn


def describe_throttling(capacity: DynamoDBCapacity) -> str:
    """One line: what the emulator admitted and refused, and where."""
    stats = capacity.stats
    refused = sum(stats.throttled.values())
    admitted = f"{stats.admitted} write and {stats.reads_admitted} read request(s) admitted"
    if not refused:
        return f"DynamoDB capacity: {admitted}, none throttled"
    codes = ", ".join(f"{code} {count}" for code, count in stats.throttled.most_common())
    where = ", ".join(
        f"{resource} {count}{' (hot partition)' if stats.hot_keys[resource] else ''}"
        for resource, count in (stats.throttled_resources + stats.read_throttled).most_common()
    )
    return f"DynamoDB capacity: {admitted}, {refused} throttled ({codes}) on {where}"
