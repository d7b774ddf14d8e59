"""The simulator's parts that need no DynamoDB: the delivery plan, table comparison, fault arming,
and how the template tells bookkeeping tables from the jobs' own."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from clockless_tools.delivery import TickPlan, plan_deliveries
from clockless_tools.faults import tables_in_request
from clockless_tools.simulate import (
    SimulationInputError,
    SimulationRequest,
    bookkeeping_tables,
    expected_ticks,
    job_tables,
    parse_drop,
)
from clockless_tools.snapshot import compare_table, effects_between
from clockless_tools.template import Template

START, END = datetime(2026, 11, 27, tzinfo=UTC), datetime(2026, 11, 29, tzinfo=UTC)


def _plans(template: Template, seed: int, dropped: set[tuple[str, datetime]] | None = None) -> list[TickPlan]:
    return plan_deliveries(template, expected_ticks(template, START, END), seed=seed, dropped=dropped or set())


def test_the_plan_is_the_same_for_the_same_seed_and_differs_for_another(template: Template) -> None:
    assert _plans(template, 3) == _plans(template, 3)
    assert _plans(template, 3) != _plans(template, 4)


def test_every_job_has_a_tick_that_gets_every_kind_of_delivery(template: Template) -> None:
    for job in template.jobs:
        plans = [plan for plan in _plans(template, 1) if plan.job == job]

        assert any(plan.burst > 1 and 1 in plan.fail_after and plan.redelivery_at and plan.late_at for plan in plans), (
            job
        )


def test_deliveries_fall_where_production_puts_them(template: Template) -> None:
    for plan in _plans(template, 2):
        period = timedelta(days=1) if plan.job == "window-generation" else timedelta(hours=1)
        # Scheduler fires within the tick's minute.
        assert timedelta(0) <= plan.first_at - plan.scheduled_time < timedelta(minutes=1)
        # A late delivery arrives after the job's next tick.
        if plan.late_at is not None:
            assert plan.late_at > plan.scheduled_time + period
        assert plan.retries is not None
        assert plan.retries.max_retries == template.jobs[plan.job].properties["RetryPolicy"]["MaximumRetryAttempts"]


def test_a_dropped_tick_is_never_delivered_and_the_others_keep_their_plans(template: Template) -> None:
    dropped = ("session-cleanup", datetime(2026, 11, 28, 3, tzinfo=UTC))

    plans = _plans(template, 5, {dropped})
    kept = {plan.key: plan for plan in _plans(template, 5)}

    assert "session-cleanup@2026-11-28T03:00:00Z" not in {plan.key for plan in plans}
    assert len(plans) == len(kept) - 1
    for plan in plans:
        assert (plan.fail_after, plan.burst, plan.first_at) == (
            kept[plan.key].fail_after,
            kept[plan.key].burst,
            kept[plan.key].first_at,
        )


def test_a_plan_survives_the_trip_between_processes(template: Template) -> None:
    for plan in _plans(template, 6):
        assert TickPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan


def test_drops_must_name_a_tick_of_a_scheduled_job(template: Template) -> None:
    assert parse_drop("session-cleanup@2026-11-28T03:00:00Z") == (
        "session-cleanup",
        datetime(2026, 11, 28, 3, tzinfo=UTC),
    )
    with pytest.raises(SimulationInputError, match="must be JOB@UTC_TIME"):
        parse_drop("@2026-11-28T03:00:00Z")
    with pytest.raises(SimulationInputError, match="not a tick of session-cleanup"):
        SimulationRequest(
            template, START, END, drops=(("session-cleanup", datetime(2026, 11, 28, 3, 30, tzinfo=UTC)),)
        ).validate()


def test_bookkeeping_tables_are_told_by_their_metadata(template: Template) -> None:
    assert bookkeeping_tables(template) == {"IdempotencyTable", "LedgerTable"}
    assert job_tables(template, "WindowGenerationFunction") == ["ProgramsTable", "WindowsTable"]
    assert job_tables(template, "SessionCleanupFunction") == ["SessionsTable"]


def _item(key: str, **attributes: str) -> dict[str, dict[str, str]]:
    return {"id": {"S": key}, **{name: {"N": value} for name, value in attributes.items()}}


def test_comparison_names_extra_missing_and_changed_items() -> None:
    simulation = [_item("a", count="1"), _item("b", count="2"), _item("c")]
    reference = [_item("a", count="1"), _item("b", count="1"), _item("d")]

    differences = compare_table("Counters", simulation, reference, ["id"])

    assert [(d.key, d.kind, d.attributes) for d in differences] == [
        ({"id": "b"}, "changed", {"count": ("2", "1")}),
        ({"id": "c"}, "extra", {}),
        ({"id": "d"}, "missing", {}),
    ]
    assert differences[0].describe() == "Counters [id=b]: count: '2' vs '1' (simulation vs reference)"


def test_sets_in_another_order_are_the_same_item() -> None:
    first = [{"id": {"S": "a"}, "tags": {"SS": ["x", "y"]}}]
    second = [{"id": {"S": "a"}, "tags": {"SS": ["y", "x"]}}]

    assert compare_table("T", first, second, ["id"]) == []


def test_effects_count_created_updated_and_deleted_items() -> None:
    before = [_item("kept"), _item("changed", n="1"), _item("deleted")]
    after = [_item("kept"), _item("changed", n="2"), _item("created")]

    effects = effects_between(before, after, ["id"])

    assert (effects.created, effects.updated, effects.deleted, effects.total) == (1, 1, 1, 3)


@dataclass
class _Request:
    body: bytes
    headers: dict[str, bytes] = field(default_factory=dict)


def _request(payload: object, operation: str = "Query") -> _Request:
    return _Request(json.dumps(payload).encode(), {"X-Amz-Target": f"DynamoDB_20120810.{operation}".encode()})


def test_the_tables_a_request_names_are_found_in_every_operation_shape() -> None:
    assert tables_in_request(_request({"TableName": "A"})) == {"A"}
    assert tables_in_request(
        _request({"TransactItems": [{"Put": {"TableName": "A"}}, {"Update": {"TableName": "B"}}]})
    ) == {"A", "B"}
    assert tables_in_request(_request({"RequestItems": {"C": []}})) == {"C"}
    assert tables_in_request(_Request(b"not json")) == set()
