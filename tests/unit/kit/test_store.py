"""Every request the fan-out's store can make (clockless.fanout.store), built against a recording
client, holds a condition of the state table (clockless.state) for the record it writes;
a condition the table lacks, planted in the store, is caught. Plain Python: no moto."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from clockless.fanout import store as store_module
from clockless.fanout import tick_store as tick_store_module
from clockless.fanout.store import PartitionStore
from clockless.fanout.tick_store import TickStore
from clockless.state import (
    CHECK_EARLIER,
    HOLD,
    SETTLE,
    SETTLE_ALL_EXHAUSTED,
    SETTLE_EXHAUSTED,
    TRANSITIONS,
    Record,
    Transition,
    transition_of,
)

JOB: Final = "toy"
TICK: Final = "2026-12-01T02:00:00Z"
# The job's own overlap guard writes these (clockless.overlap), not the fan-out's store.
NOT_THE_STORES: Final = frozenset({HOLD.name, CHECK_EARLIER.name})
# Methods that build no request.
NOT_REQUESTS: Final = frozenset({"lane_key"})


class _Refused(Exception):
    pass


@dataclass
class Recording:
    """A DynamoDB client that records each request and answers as if it applied."""

    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    class exceptions:
        ConditionalCheckFailedException = _Refused
        TransactionCanceledException = _Refused

    def _record(self, operation: str, request: dict[str, Any]) -> None:
        self.requests.append((operation, request))

    def update_item(self, **request: Any) -> dict[str, Any]:
        self._record("UpdateItem", request)
        return {"Attributes": {"status": {"S": "running"}}}

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        self._record("TransactWriteItems", request)
        return {}

    def get_item(self, **request: Any) -> dict[str, Any]:
        self._record("GetItem", request)
        return {"Item": {**request["Key"], "failed_items": {"SS": ["k"]}}}

    def query(self, **request: Any) -> dict[str, Any]:
        self._record("Query", request)
        return {"Items": []}


def _partition_store(client: Recording) -> PartitionStore:
    return PartitionStore(client, "LedgerTable", JOB, TICK, "3", "run-1", retention_seconds=86400)


def _tick_store(client: Recording) -> TickStore:
    return TickStore(client, "LedgerTable", JOB, TICK)


# Each public method of the stores, and the calls that make each request it can make.
PARTITION_CALLS: Final[Mapping[str, list[Callable[[PartitionStore], object]]]] = {
    "read": [lambda s: s.read()],
    "acquire": [
        lambda s: s.acquire(lease_until_ms=9, hop=0),
        lambda s: s.acquire(lease_until_ms=9, hop=2, existing_only=True, receives=5),
    ],
    "acquire_first": [lambda s: s.acquire_first(lease_until_ms=9, hop=0, partitions_total=4)],
    "store_cursor": [lambda s: s.store_cursor({"id": "a"}), lambda s: s.store_cursor({"id": "b"}, already_done=2)],
    "hand_on": [
        lambda s: s.hand_on({"id": "a"}, already_done=1),
        lambda s: s.hand_on(None, last_error="throttled", throttle_continuations=2),
        lambda s: s.hand_on({"id": "a"}, last_error="throttled", throttle_continuations=1),
    ],
    "note_error": [lambda s: s.note_error("Boom")],
    "done_transaction": [lambda s: s.done_transaction(), lambda s: s.done_transaction(already_done=3)],
    "exhausted_actions": [lambda s: s.exhausted_actions()],
    "mark_exhausted": [lambda s: s.mark_exhausted()],
    "mark_unrun": [lambda s: s.mark_unrun(3)],
    "note_failures": [lambda s: s.note_failures([{"S": "{}"}], max_listed=100)],
    "lane_counter": [lambda s: s.lane_counter(0, 7)],
    "failed_record": [lambda s: s.failed_record(["a"]), lambda s: s.failed_record(["a", "b", "c"])],
    "replay_counter": [lambda s: s.replay_counter(["a"], 1, 0), lambda s: s.replay_counter(["a", "b"], 1, 1)],
    "failed_keys": [lambda s: s.failed_keys()],
}
TICK_CALLS: Final[Mapping[str, list[Callable[[TickStore], object]]]] = {
    "read": [lambda t: t.read(), lambda t: t.read(projection="partitions_total, #status")],
    "records": [lambda t: t.records()],
    "claimed_check": [lambda t: t.claimed_check(4)],
    "count_done": [lambda t: t.count_done("3")],
    "count_exhausted": [lambda t: t.count_exhausted("3")],
    "count_unrun": [lambda t: t.count_unrun("3", 4)],
    "settle": [
        lambda t: t.settle(SETTLE, "SET x = :x", {}),
        lambda t: t.settle(SETTLE_EXHAUSTED, "SET x = :x", {}),
        lambda t: t.settle(SETTLE_ALL_EXHAUSTED, "SET x = :x", {}),
    ],
    "reported": [lambda t: t.reported()],
    "release_buffered": [lambda t: t.release_buffered(released_by=TICK, partitions_total=4)],
    "fail_start": [lambda t: t.fail_start(after=TICK, error="died", mark="m")],
    "reap": [
        lambda t: t.reap(claim_id="c-1", partitions_done=2, error="not done", failures="[]", summary="{}", mark="m"),
        lambda t: t.reap(
            claim_id="c-1", partitions_done=2, error="not done", failures="[]", summary="{}", mark="m", not_done=["3"]
        ),
    ],
}


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and inspect.isfunction(member) and name not in NOT_REQUESTS
    }


@dataclass(frozen=True, slots=True)
class Write:
    """One conditional action of a request: where it came from, the record it writes, its condition."""

    source: str
    record: Record
    condition: str | None


def _record_of(key: Mapping[str, Any]) -> Record:
    if not str(key["job"]["S"]).endswith("#work"):
        return Record.TICK
    return Record.LANE if "#l" in str(key["scheduled_time"]["S"]) else Record.PARTITION


def _actions(request: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The write actions of a request or of an action list: transaction items, or the request itself."""
    if "TransactItems" in request:
        for item in request["TransactItems"]:
            yield from item.values()
    elif any(kind in request for kind in ("Update", "Put", "Delete", "ConditionCheck")):
        yield from request.values()
    else:
        yield request


def writes(source: str, made: list[tuple[str, dict[str, Any]]], returned: object) -> Iterator[Write]:
    """The conditional writes a call sent (through the client) or returned (actions for a transaction)."""
    requests = [request for operation, request in made if operation in ("UpdateItem", "TransactWriteItems")]
    if isinstance(returned, dict) and "Key" in next(iter(returned.values()), {}):
        requests.append(returned)
    if isinstance(returned, list) and all(isinstance(action, dict) for action in returned):
        requests.append({"TransactItems": returned})
    for request in requests:
        for action in _actions(request):
            yield Write(source, _record_of(action["Key"]), action.get("ConditionExpression"))


def every_write() -> list[Write]:
    found: list[Write] = []
    for calls, build in ((PARTITION_CALLS, _partition_store), (TICK_CALLS, _tick_store)):
        for method, cases in calls.items():
            for case in cases:
                client = Recording()
                returned = case(build(client))  # type: ignore[arg-type]
                found.extend(writes(method, client.requests, returned))
    return found


def lacking(found: list[Write]) -> list[str]:
    """Each write whose condition the table has no transition for, on the record it writes."""
    return [
        f"{write.source}: {write.record.value} condition {write.condition!r} is no transition of the state table"
        for write in found
        if transition_of(write.condition, write.record) is None
    ]


def test_every_public_method_of_the_stores_has_its_requests_built_here() -> None:
    assert _public_methods(PartitionStore) == set(PARTITION_CALLS)
    assert _public_methods(TickStore) == set(TICK_CALLS)


def test_every_request_the_store_makes_holds_a_condition_of_the_state_table() -> None:
    found = every_write()

    assert len(found) > 30
    assert lacking(found) == []


def test_the_store_makes_every_transition_of_the_fan_out() -> None:
    # Transitions sharing a condition (count-done and count-exhausted, store-cursor and hand-on,
    # release and note-error) are told apart by the method that makes them: a write counts for each.
    made = {
        t.name
        for write in every_write()
        for t in TRANSITIONS
        if t.record is write.record and t.matches(write.condition)
    }

    assert made == {transition.name for transition in TRANSITIONS} - NOT_THE_STORES


@pytest.mark.parametrize(
    ("name", "loosened"),
    [
        ("STORE_CURSOR", "lease_owner = :me OR attribute_not_exists(lease_owner)"),
        ("MARK_DONE", "lease_owner = :me AND #status = :done"),
        ("LIST_FAILED", "attribute_not_exists(failed_items) OR {not_listed}"),  # its brackets lost
        ("CHECK_TICK_CLAIMED", "partitions_total >= :partitions_total"),
    ],
)
def test_a_condition_the_table_lacks_planted_in_the_store_is_caught(
    monkeypatch: pytest.MonkeyPatch, name: str, loosened: str
) -> None:
    # Planted where the store takes it from: the partition records' module or the tick entry's.
    (module,) = [module for module in (store_module, tick_store_module) if hasattr(module, name)]
    original: Transition = getattr(module, name)
    planted = Transition(original.name, original.record, original.sources, original.targets, loosened, original.why)
    monkeypatch.setattr(module, name, planted)

    problems = lacking(every_write())

    shown = planted.render([":k0"]) if "{" in loosened else loosened
    assert any(repr(shown) in problem for problem in problems), problems


def test_a_settling_condition_the_table_lacks_is_caught() -> None:
    # The finisher hands the store the transition it chose (clockless.state.settle_transition).
    loosened = Transition("settle", Record.TICK, SETTLE.sources, SETTLE.targets, "partitions_done >= :done", "")
    client = Recording()
    _tick_store(client).settle(loosened, "SET x = :x", {})

    assert lacking(list(writes("settle", client.requests, None))) == [
        "settle: tick condition 'partitions_done >= :done' is no transition of the state table"
    ]
