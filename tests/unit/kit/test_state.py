"""The fan-out's state machine as tables (clockless.state): the stored strings, the parsers,
the transitions' conditions and the deciders, in plain Python (no moto)."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from clockless import ledger
from clockless.state import (
    SETTLE,
    SETTLE_ALL_EXHAUSTED,
    SETTLE_EXHAUSTED,
    TRANSITIONS,
    LeaseDecision,
    Outcome,
    PartitionPhase,
    PartitionRecord,
    PartitionStatus,
    Record,
    Settle,
    TickEntry,
    TickPhase,
    TickStatus,
    Transition,
    decide_lease,
    each_key,
    refusal,
    settle_decision,
    settle_transition,
    settled_status,
    transition_of,
)

NOW: Final = 1_000_000
ME: Final = "run-1"


def _item(**attributes: Any) -> dict[str, Any]:
    """A DynamoDB item: ints as N, frozensets as SS, everything else as S."""
    item: dict[str, Any] = {}
    for name, value in attributes.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            item[name] = {"N": str(value)}
        elif isinstance(value, frozenset):
            item[name] = {"SS": sorted(value)}
        else:
            item[name] = {"S": str(value)}
    return item


# ------------------------------------------------------------------------------------ the stored strings
@pytest.mark.parametrize(
    ("member", "stored"),
    [
        (PartitionStatus.RUNNING, "running"),
        (PartitionStatus.DONE, "done"),
        (TickStatus.STARTED, ledger.STATUS_STARTED),
        (TickStatus.SUCCEEDED, ledger.STATUS_SUCCEEDED),
        (TickStatus.FAILED, ledger.STATUS_FAILED),
        (TickStatus.SKIPPED, ledger.STATUS_SKIPPED),
        (TickStatus.BUFFERED, "buffered"),
        (Outcome.DONE, "done"),
        (Outcome.HELD, "held by a live worker"),
        (Outcome.ALREADY_DONE, "already done"),
        (Outcome.CONTINUED, "continued"),
        (Outcome.REPLAYED, "replayed"),
        (Outcome.STARTED, "buffered tick started"),
        (Outcome.RETIRED, "a retired kind of message: acknowledged, nothing done"),
        (Settle.NOT_COMPLETE, "not complete"),
        (Settle.ALREADY_SETTLED, "already settled"),
        (Settle.UNREPORTED, "succeeded, TickSucceeded not reported yet"),
        (Settle.SUCCEEDED, "succeeded"),
        (Settle.FAILED, "failed"),
    ],
    ids=str,
)
def test_states_and_outcomes_serialise_as_the_strings_the_records_and_logs_hold(member: str, stored: str) -> None:
    assert member == stored
    assert json.dumps(member) == json.dumps(stored)
    assert f"{member}" == stored


# --------------------------------------------------------------------------------------------- parsers
def test_a_partition_record_is_parsed_once_for_every_reader() -> None:
    cursor = {"due_shard": "3", "id": "x"}
    item = _item(
        job="toy#work",
        scheduled_time="2026-12-01T02:00:00Z#p3",
        status="running",
        lease_owner=ME,
        lease_until=NOW,
        hops=2,
        cursor=json.dumps(cursor),
        receives=4,
        last_error="Boom: no",
        throttle_continuations=1,
        failed_items=frozenset({"a", "b"}),
        replayed_items=frozenset({"c"}),
        already_done=7,
        failed=2,
    )
    record = PartitionRecord.from_item(item)
    assert record == PartitionRecord(
        exists=True,
        partition="3",
        status=PartitionStatus.RUNNING,
        lease_owner=ME,
        lease_until=NOW,
        hops=2,
        cursor_text=json.dumps(cursor),
        receives=4,
        last_error="Boom: no",
        throttle_continuations=1,
        failed_items=frozenset({"a", "b"}),
        replayed_items=frozenset({"c"}),
        already_done=7,
        failed=2,
    )
    assert record.cursor == cursor
    assert not record.is_lane


@pytest.mark.parametrize(
    ("scheduled_time", "partition", "lane"),
    [
        ("2026-12-01T02:00:00Z#p3", "3", None),
        ("2026-12-01T02:00:00Z#p3#l0", "3", 0),
        ("2026-12-01T02:00:00Z#p12#l11", "12", 11),
        ("2026-12-01T02:00:00Z#peu-west", "eu-west", None),
    ],
)
def test_a_lane_record_is_told_from_its_partition_record_by_its_key(
    scheduled_time: str, partition: str, lane: int | None
) -> None:
    record = PartitionRecord.from_item(_item(scheduled_time=scheduled_time, applied=3))
    assert (record.partition, record.lane, record.is_lane, record.applied) == (partition, lane, lane is not None, 3)


def test_no_record_parses_as_an_empty_one() -> None:
    empty: tuple[dict[str, Any] | None, ...] = (None, {})
    for item in empty:
        record = PartitionRecord.from_item(item)
        assert record == PartitionRecord()
        assert (record.exists, record.done, record.lease_ends, record.cursor) == (False, False, 0, None)


@pytest.mark.parametrize(
    ("attributes", "phase"),
    [
        (None, PartitionPhase.ABSENT),
        ({"status": "done", "lease_until": NOW + 5}, PartitionPhase.DONE),
        ({"status": "running", "lease_until": NOW}, PartitionPhase.LEASED),
        ({"status": "running", "lease_until": NOW - 1}, PartitionPhase.FREE),
        ({"status": "running", "lease_until": 0}, PartitionPhase.FREE),
        ({"status": "running"}, PartitionPhase.FREE),
    ],
    ids=str,
)
def test_a_partition_records_phase(attributes: dict[str, Any] | None, phase: PartitionPhase) -> None:
    item = None if attributes is None else _item(**attributes)
    assert PartitionRecord.from_item(item).phase(NOW) is phase


def test_a_tick_entry_is_parsed_once_for_every_reader() -> None:
    item = _item(
        job="toy",
        scheduled_time="2026-12-01T02:00:00Z",
        status="succeeded",
        partitions_total=4,
        partitions_done=3,
        partitions_exhausted=frozenset({"2", "10"}),
        metric_pending="TickSucceeded",
        started_at="2026-12-01T02:00:01Z",
        overlap_with="2026-12-01T01:00:00Z",
        released_by="2026-12-01T01:00:00Z",
        start_failed="x",
        finished_by="f-1",
        reason="why",
    )
    entry = TickEntry.from_item(item)
    assert (entry.exists, entry.status, entry.partitions_total, entry.partitions_done) == (
        True,
        TickStatus.SUCCEEDED,
        4,
        3,
    )
    assert entry.exhausted == ("10", "2")  # sorted as text, as the finisher lists them
    assert entry.metric_pending
    assert (entry.started_at, entry.overlap_with, entry.released_by, entry.start_failed, entry.finished_by) == (
        "2026-12-01T02:00:01Z",
        "2026-12-01T01:00:00Z",
        "2026-12-01T01:00:00Z",
        "x",
        "f-1",
    )
    assert entry.text("reason") == "why"
    assert TickEntry.from_item(None) == TickEntry()
    assert TickEntry.from_item(_item(status="paused")).status is None  # not one of the fan-out's


# ----------------------------------------------------------------------------------------- transitions
def test_every_transition_is_named_once_and_moves_between_its_records_states() -> None:
    names = [transition.name for transition in TRANSITIONS]
    assert len(names) == len(set(names))
    for transition in TRANSITIONS:
        phases = PartitionPhase if transition.record in (Record.PARTITION, Record.LANE) else TickPhase
        assert transition.sources, transition.name
        assert transition.targets, transition.name
        assert all(isinstance(state, phases) for state in (*transition.sources, *transition.targets)), transition.name


def test_every_state_is_reached_by_a_transition() -> None:
    reached = {state for transition in TRANSITIONS for state in transition.targets}
    assert set(PartitionPhase) - reached == {PartitionPhase.ABSENT}
    assert set(TickPhase) - reached == {TickPhase.ABSENT}


@pytest.mark.parametrize(
    ("condition", "name"),
    [
        ("attribute_not_exists(#status)", "take-first-lease"),
        (
            "(attribute_not_exists(#status) OR #status <> :done) AND "
            "(attribute_not_exists(lease_until) OR lease_until < :now OR lease_owner = :me)",
            "take-lease",
        ),
        ("lease_owner = :me AND #status <> :done", "mark-done"),
        ("attribute_not_exists(failed_items) OR (NOT contains(failed_items, :k0))", "list-failed"),
        (
            "attribute_not_exists(failed_items) OR "
            "(NOT contains(failed_items, :k0) AND NOT contains(failed_items, :k1))",
            "list-failed",
        ),
        ("contains(failed_items, :k0) AND contains(failed_items, :k1)", "count-replayed"),
        ("partitions_done = partitions_total AND #status <> :succeeded", "settle"),
        ("attribute_exists(metric_pending)", "reported"),
        (None, "count-applied"),
    ],
)
def test_a_condition_names_its_transition(condition: str | None, name: str) -> None:
    found = transition_of(condition)
    assert found is not None
    assert found.name == name


@pytest.mark.parametrize(
    "condition",
    [
        "attribute_not_exists(#status) OR 1 = 1",  # a loosened lease
        "lease_owner = :me AND #status <> :dome",
        "partitions_done >= partitions_total AND #status <> :succeeded",
        "",
        "contains(failed_items, :k0) OR contains(failed_items, :k1)",  # a part joined loosely
        "contains(failed_items, :k0) AND lease_owner = :me",
    ],
)
def test_a_condition_the_table_lacks_names_no_transition(condition: str) -> None:
    assert transition_of(condition) is None


def test_a_per_key_part_is_rendered_into_its_transitions_condition() -> None:
    listed = next(t for t in TRANSITIONS if t.name == "list-failed")
    assert listed.render([":k0", ":k1"]) == (
        "attribute_not_exists(failed_items) OR (NOT contains(failed_items, :k0) AND NOT contains(failed_items, :k1))"
    )
    assert each_key("contains(failed_items, {key})", [":k0"]) == "contains(failed_items, :k0)"
    with pytest.raises(ValueError, match="item keys"):
        listed.render()
    unconditional = Transition("x", Record.LANE, (PartitionPhase.LEASED,), (PartitionPhase.LEASED,), None, "")
    with pytest.raises(ValueError, match="no condition"):
        unconditional.render()


# -------------------------------------------------------------------------------------------- deciders
@pytest.mark.parametrize(
    ("attributes", "decision"),
    [
        ({"status": "running", "lease_owner": "other", "lease_until": NOW - 1}, LeaseDecision.TAKE),  # ran out
        ({"status": "running", "lease_owner": "other", "lease_until": 0}, LeaseDecision.TAKE),  # released
        ({"status": "running", "lease_owner": "other", "lease_until": NOW}, LeaseDecision.HELD),  # live
        ({"status": "running", "lease_owner": ME, "lease_until": NOW + 9}, LeaseDecision.TAKE),  # its own resend
        ({"status": "done", "lease_owner": "other", "lease_until": 0}, LeaseDecision.DONE),
        # its own, done: the plain lease is asked, and refuses (as before: one request more)
        ({"status": "done", "lease_owner": ME, "lease_until": 0}, LeaseDecision.TAKE),
        ({"status": "running"}, LeaseDecision.TAKE),
    ],
    ids=str,
)
def test_a_first_run_refused_by_an_existing_record_decides_from_it(
    attributes: dict[str, Any], decision: LeaseDecision
) -> None:
    old = PartitionRecord.from_item(_item(scheduled_time="t#p0", **attributes))
    assert decide_lease(old, owner=ME, now_ms=NOW) is decision


@pytest.mark.parametrize(
    ("status", "decision"),
    [("done", LeaseDecision.DONE), ("running", LeaseDecision.HELD), (None, LeaseDecision.HELD)],
)
def test_a_refused_lease_is_done_or_held(status: str | None, decision: LeaseDecision) -> None:
    assert refusal(PartitionRecord.from_item(_item(scheduled_time="t#p0", status=status, lease_until=NOW))) is decision


@pytest.mark.parametrize(
    ("attributes", "decided"),
    [
        ({}, Settle.NOT_COMPLETE),  # no entry
        ({"status": "started"}, Settle.NOT_COMPLETE),  # not fanned out
        ({"status": "started", "partitions_total": 4, "partitions_done": 3}, Settle.NOT_COMPLETE),
        ({"status": "started", "partitions_total": 4, "partitions_done": 4}, None),
        ({"status": "started", "partitions_total": 4, "partitions_done": 3, "partitions_exhausted": ["1"]}, None),
        ({"status": "started", "partitions_total": 2, "partitions_exhausted": ["0", "1"]}, None),
        ({"status": "failed", "partitions_total": 2, "partitions_done": 2}, None),  # settled again after a replay
        ({"status": "succeeded", "partitions_total": 2, "partitions_done": 2}, Settle.ALREADY_SETTLED),
        (
            {"status": "succeeded", "partitions_total": 2, "partitions_done": 2, "metric_pending": "TickSucceeded"},
            Settle.UNREPORTED,
        ),
    ],
    ids=str,
)
def test_the_finisher_decides_from_the_tick_entry_whether_to_settle(
    attributes: dict[str, Any], decided: Settle | None
) -> None:
    if "partitions_exhausted" in attributes:
        attributes = {**attributes, "partitions_exhausted": frozenset(attributes["partitions_exhausted"])}
    assert settle_decision(TickEntry.from_item(_item(**attributes))) is decided


@pytest.mark.parametrize(
    ("done", "exhausted", "tolerated", "status", "transition"),
    [
        (4, (), True, TickStatus.SUCCEEDED, SETTLE),
        (4, (), False, TickStatus.FAILED, SETTLE),
        (3, ("1",), True, TickStatus.FAILED, SETTLE_EXHAUSTED),  # an exhausted partition fails the tick
        (0, ("0", "1", "2", "3"), True, TickStatus.FAILED, SETTLE_ALL_EXHAUSTED),
    ],
)
def test_a_complete_tick_settles_by_its_exhausted_partitions_and_tolerance(
    done: int, exhausted: tuple[str, ...], tolerated: bool, status: TickStatus, transition: Transition
) -> None:
    entry = TickEntry(exists=True, status_text="started", partitions_total=4, partitions_done=done, exhausted=exhausted)
    assert settled_status(entry, tolerated=tolerated) is status
    assert settle_transition(entry) is transition
