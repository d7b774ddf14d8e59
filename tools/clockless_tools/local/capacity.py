"""A capacity-faithful embedded DynamoDB: DynamoDB's write throughput rules enforced in front of
moto (which has no partitions and no limits), scaled so a laptop can run them.

The rules, each from AWS's own pages:

- **per partition key**: one partition serves at most 1,000 write units per second; the guide's
  "Understanding DynamoDB warm throughput in different scenarios" page ("each individual
  partition is limited to 1,000 write units per second") and "Key range throughput exceeded (hot
  partitions)" (tables and GSIs alike). Here every partition key value of a table, and of each
  global secondary index, has its own bucket: DynamoDB may split a hot key's item collection,
  but a single key value is not served faster (the re:Post "on-demand table throttling" article);
- **a table's and each GSI's on-demand start**: a new on-demand table or index sustains up to
  4,000 write units per second ("DynamoDB on-demand capacity mode", "Initial throughput and
  scaling properties"; the warm-throughput scenarios page: a new on-demand table starts at a warm
  throughput of 4,000 write units per second). Declared `WarmThroughput` starts it higher
  ("Understanding DynamoDB warm throughput");
- **growth from the previous peak**: on-demand serves up to double its previous peak at once;
  beyond that it "might" throttle when the peak is doubled within 30 minutes (re:Post "on-demand
  table throttling"). Here the ceiling is max(start, 2 x the highest second's consumption
  recorded at least `growth_seconds` (1,800) ago);
- **the per-table quota**: 40,000 write request units per second per on-demand table by default
  ("DynamoDB on-demand capacity mode", the note on throughput default quotas);
- **GSI back-pressure**: an index short of write capacity throttles the write to the base table
  (re:Post "dynamodb-gsi-throttling-table"; the guide's "Understanding GSI write throttling and
  back pressure");
- **what a refused write gets**: `TransactWriteItems` a `TransactionCanceledException` whose
  `CancellationReasons` carry `ThrottlingError` for the throttled actions and `None` for the
  others (the API reference's TransactionCanceledException, botocore's service model); a single
  write a `ProvisionedThroughputExceededException` with a `ThrottlingReasons` entry
  (`TableWriteKeyRangeThroughputExceeded`, `IndexWriteKeyRangeThroughputExceeded`) for a hot key
  and a `ThrottlingException` for a table or index above its current on-demand capacity
  ("Diagnosing throttling", API reference "ThrottlingReason"). A `BatchWriteItem` is admitted or
  refused whole (DynamoDB would hand back the throttled part as UnprocessedItems).

Write units are the items' own, priced by `clockless_tools.local.units` from the items before
and after the write (a transaction's actions twice, index entries as they change). moto applies
the request first (every DynamoDB request passes one at a time, see `SerializedDynamoDB`); a
write the buckets cannot admit is undone item by item and refused, so nobody sees it.

**Scale**: every rate is divided by `scale`; time runs at its real speed. N items at scale S
meet the limits that N x S items meet on DynamoDB, in the same time.

Buckets may run into debt: a request is admitted while its buckets are positive and then pays
its whole cost, so a write larger than a second's worth of a key is slowed, never refused forever.
"""

from __future__ import annotations

import enum
import io
import json
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clockless_tools.local.units import (
    IndexShape,
    MotoTables,
    moto_dynamodb_backend,
    projected_entry,
    write_actions,
    write_units_of,
)

KEY_WRITE_UNITS: Final = 1_000.0  # per partition key value, per second
NEW_ON_DEMAND_WRITE_UNITS: Final = 4_000.0  # a new on-demand table or GSI, per second
TABLE_QUOTA_WRITE_UNITS: Final = 40_000.0  # per on-demand table (service quota default)
PEAK_GROWTH_SECONDS: Final = 1_800.0  # a peak sustained this long ago may be doubled at once
# A bucket holds this many seconds of its rate: enough for one request to pass, not a stored burst.
BUCKET_SECONDS: Final = 1.0

THROTTLING_MESSAGE: Final = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html."
)
_ERROR_PREFIX: Final = "com.amazonaws.dynamodb.v20120810#"
_JSON: Final = "application/x-amz-json-1.0"


class Start(enum.StrEnum):
    COLD = "cold"  # a new on-demand table and index: 4,000 write units per second
    WARM = "warm"  # the declared WarmThroughput (or `warm_write_units`)


@dataclass(frozen=True)
class CapacitySettings:
    """What the emulator enforces. Rates are DynamoDB's; `scale` divides them all."""

    start: Start = Start.COLD
    scale: float = 1.0
    # warm start: write units per second for every table and index not named in `declared`
    warm_write_units: float = NEW_ON_DEMAND_WRITE_UNITS
    # warm start: per table name or "table/index", the declared WarmThroughput write units
    declared: Mapping[str, float] = field(default_factory=dict)
    key_write_units: float = KEY_WRITE_UNITS
    new_write_units: float = NEW_ON_DEMAND_WRITE_UNITS
    table_quota_write_units: float = TABLE_QUOTA_WRITE_UNITS
    growth_seconds: float = PEAK_GROWTH_SECONDS

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"capacity scale must be positive, got {self.scale!r}")
        for name, value in (("warm write units", self.warm_write_units), *self.declared.items()):
            if not value > 0:
                raise ValueError(f"{name}: write units per second must be positive, got {value!r}")

    def starting_rate(self, resource: str) -> float:
        """Write units per second a table or "table/index" serves from the start (unscaled)."""
        warm = self.declared.get(resource, self.warm_write_units)
        rate = self.new_write_units if self.start is Start.COLD else warm
        return min(max(rate, self.new_write_units), self.table_quota_write_units)


class TokenBucket:
    """Units per second, refilled continuously, at most `BUCKET_SECONDS` of them stored."""

    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self.level = rate * BUCKET_SECONDS
        self.updated = now

    def refill(self, now: float) -> float:
        self.level = min(self.rate * BUCKET_SECONDS, self.level + (now - self.updated) * self.rate)
        self.updated = now
        return self.level


class _Resource:
    """A table or an index as a whole: its on-demand ceiling, its growth, its consumption."""

    def __init__(self, start: float, settings: CapacitySettings, now: float) -> None:
        self.settings = settings
        self.start = start / settings.scale
        self.bucket = TokenBucket(self.start, now)
        self.seconds: deque[tuple[int, float]] = deque()  # (whole second, units consumed in it)
        self.matured_peak = 0.0  # highest second at least growth_seconds old
        self.peak = 0.0
        self.consumed = 0.0

    def ceiling(self, now: float) -> float:
        while self.seconds and self.seconds[0][0] + 1 <= now - self.settings.growth_seconds:
            self.matured_peak = max(self.matured_peak, self.seconds.popleft()[1])
        quota = self.settings.table_quota_write_units / self.settings.scale
        return min(quota, max(self.start, 2 * self.matured_peak))

    def consume(self, units: float, now: float) -> None:
        self.bucket.level -= units
        self.consumed += units
        second = int(now)
        if self.seconds and self.seconds[-1][0] == second:
            self.seconds[-1] = (second, self.seconds[-1][1] + units)
        else:
            self.seconds.append((second, units))
        self.peak = max(self.peak, self.seconds[-1][1])


@dataclass
class Charge:
    """What one request's writes cost, by where they land."""

    keys: defaultdict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))  # (resource, key)
    resources: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # table or table/index
    # action index -> the resources it touches (a transaction's throttled actions are named)
    actions: dict[int, set[str]] = field(default_factory=dict)

    def add(self, action: int, resource: str, key: str, units: float) -> None:
        if units <= 0:
            return
        self.keys[(resource, key)] += units
        self.resources[resource] += units
        self.actions.setdefault(action, set()).add(resource)


@dataclass(frozen=True)
class Refusal:
    resource: str
    hot_key: bool  # a partition key over its limit (else the table or index as a whole)


@dataclass
class CapacityStats:
    """What the emulator saw, for a report."""

    admitted: int = 0
    throttled: Counter[str] = field(default_factory=Counter)  # by error code
    throttled_resources: Counter[str] = field(default_factory=Counter)
    hot_keys: Counter[str] = field(default_factory=Counter)  # resource whose key was hot


class DynamoDBCapacity:
    """The buckets, and the decision for one write request (called one request at a time)."""

    def __init__(
        self, settings: CapacitySettings, *, clock: Callable[[], float] = time.monotonic, backend: Any = None
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.stats = CapacityStats()
        self._tables = MotoTables(backend if backend is not None else moto_dynamodb_backend())
        self._keys: dict[tuple[str, str], TokenBucket] = {}
        self._resources: dict[str, _Resource] = {}
        self._lock = threading.Lock()

    def consumed(self) -> dict[str, float]:
        """Write units admitted per table and "table/index", at DynamoDB's scale."""
        return {name: r.consumed * self.settings.scale for name, r in sorted(self._resources.items())}

    def peaks(self) -> dict[str, float]:
        """The highest second's write units per table and "table/index", at DynamoDB's scale."""
        return {name: r.peak * self.settings.scale for name, r in sorted(self._resources.items())}

    # ------------------------------------------------------------------------------ pricing
    def charge(self, operation: str, body: Mapping[str, Any], before: list[Any], ok: bool) -> Charge:
        """Units per key and per resource of a request moto has just answered (`ok`: applied)."""
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
            charge.add(position, table, _canonical(key[table_keys[0]]), base)
            if not ok or kind == "ConditionCheck":
                continue
            for index in indexes:
                resource = f"{table}/{index.name}"
                for entry_key, units in _index_writes(old, new, index, table_keys):
                    charge.add(position, resource, _canonical(entry_key), units)
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
    def admit(self, charge: Charge) -> Refusal | None:
        """Take the charge from every bucket it touches, or refuse it (taking nothing)."""
        now = self.clock()
        with self._lock:
            for resource in charge.resources:
                state = self._resource(resource, now)
                state.bucket.rate = state.ceiling(now)
                if state.bucket.refill(now) <= 0:
                    return self._refused(Refusal(resource, hot_key=False))
            for resource, key in charge.keys:
                bucket = self._keys.get((resource, key))
                if bucket is None:
                    bucket = self._keys[(resource, key)] = TokenBucket(
                        self.settings.key_write_units / self.settings.scale, now
                    )
                if bucket.refill(now) <= 0:
                    return self._refused(Refusal(resource, hot_key=True))
            for (resource, key), units in charge.keys.items():
                self._keys[(resource, key)].level -= units
            for resource, units in charge.resources.items():
                self._resources[resource].consume(units, now)
            self.stats.admitted += 1
        return None

    def _resource(self, name: str, now: float) -> _Resource:
        if name not in self._resources:
            self._resources[name] = _Resource(self.settings.starting_rate(name), self.settings, now)
        return self._resources[name]

    def _refused(self, refusal: Refusal) -> Refusal:
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
        if not isinstance(body, dict) or not write_actions(operation, body):
            return list(app(environ, start_response))
        try:
            before = self.touched(operation, body)
        except (KeyError, TypeError, LookupError):
            return list(app(environ, start_response))  # moto answers a malformed request itself
        answered: list[Any] = []

        def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            answered[:] = [status, headers]
            return lambda _data: None

        content = list(app(environ, keep))
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
        code, payload = self._refusal_body(operation, charge, refusal)
        self.stats.throttled[code] += 1
        start_response("400 Bad Request", [("Content-Type", _JSON), ("x-amzn-ErrorType", code)])
        return [json.dumps(payload).encode()]

    @staticmethod
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
            reason = f"{'Index' if index else 'Table'}WriteKeyRangeThroughputExceeded"
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


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _arn(resource: str) -> str:
    from clockless_tools.template.intrinsics import LocalNames

    names = LocalNames()
    table, _, index = resource.partition("/")
    arn = f"arn:aws:dynamodb:{names.region}:{names.account_id}:table/{table}"
    return f"{arn}/index/{index}" if index else arn


def capacity_settings(
    start: str | None, scale: float = 1.0, warm_units: float | None = None, declared: Mapping[str, float] | None = None
) -> CapacitySettings | None:
    """Settings from the command line's words: None (no `start`) leaves moto unlimited."""
    if start is None:
        return None
    try:
        chosen = Start(start)
    except ValueError:
        raise ValueError(f"capacity must be one of {', '.join(s.value for s in Start)}, got {start!r}") from None
    return CapacitySettings(
        start=chosen,
        scale=scale,
        warm_write_units=NEW_ON_DEMAND_WRITE_UNITS if warm_units is None else warm_units,
        declared=dict(declared or {}),
    )


def describe_settings(settings: CapacitySettings | None) -> str:
    """One line: what is enforced, at DynamoDB's figures and as scaled."""
    if settings is None:
        return "none (moto's unlimited throughput)"
    scale = settings.scale
    start = (
        f"new tables and indexes at {settings.new_write_units:,.0f}"
        if settings.start is Start.COLD
        else f"warm tables and indexes at {settings.warm_write_units:,.0f} (or as declared)"
    )
    return (
        f"{settings.start.value}: {start} write units/s, {settings.key_write_units:,.0f} per partition key, "
        f"{settings.table_quota_write_units:,.0f} per table; all divided by scale {scale:g}"
    )


def describe_throttling(capacity: DynamoDBCapacity) -> str:
    """One line: what the emulator admitted and refused, and where."""
    stats = capacity.stats
    refused = sum(stats.throttled.values())
    if not refused:
        return f"DynamoDB capacity: {stats.admitted} write request(s) admitted, none throttled"
    codes = ", ".join(f"{code} {count}" for code, count in stats.throttled.most_common())
    where = ", ".join(
        f"{resource} {count}{' (hot key)' if stats.hot_keys[resource] else ''}"
        for resource, count in stats.throttled_resources.most_common()
    )
    return f"DynamoDB capacity: {stats.admitted} write request(s) admitted, {refused} throttled ({codes}) on {where}"
