"""The capacity-faithful embedded DynamoDB (clockless_tools.local.capacity): DynamoDB's write
throughput rules in front of moto, on the template's own tables, with the refusals DynamoDB gives."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from clockless_tools.local.capacity import CapacitySettings, DynamoDBCapacity, Start, capacity_settings
from clockless_tools.local.dynamodb import (
    LOCAL_CREDENTIALS,
    LOCAL_REGION,
    EmbeddedDynamoDB,
    create_tables,
    delete_tables,
)
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template


@dataclass
class Rig:
    client: Any
    capacity: DynamoDBCapacity
    now: list[float]

    def at(self, seconds: float) -> None:
        self.now[0] = seconds


def _rig(template: Template, settings: CapacitySettings) -> Iterator[Rig]:
    with EmbeddedDynamoDB(capacity=settings) as db:
        create_tables(template, db.endpoint)
        capacity = db.throughput
        assert capacity is not None
        now = [1_000.0]
        capacity.clock = lambda: now[0]
        try:
            yield Rig(_one_attempt_client(db.endpoint), capacity, now)
        finally:
            delete_tables(template, db.endpoint)


def _one_attempt_client(endpoint: str) -> Any:
    """One attempt per call: what DynamoDB answers, not what botocore makes of it after retries."""
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=LOCAL_REGION,
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


@pytest.fixture
def scaled(template: Template) -> Iterator[Rig]:
    """Cold start at scale 1,000: 1 write unit/s per key, 4 per table and index."""
    yield from _rig(template, CapacitySettings(start=Start.COLD, scale=1_000))


PROGRAMS = LocalNames().table_name("ProgramsTable")
SESSIONS = LocalNames().table_name("SessionsTable")


def _program(tenant: str, program: str, shard: str | None = None, end: str = "2026-12-01") -> dict[str, Any]:
    item = {"tenant_id": {"S": tenant}, "program_id": {"S": program}, "current_window_end": {"S": end}}
    if shard is not None:
        item["due_shard"] = {"S": shard}
    return item


def _exists(client: Any, tenant: str, program: str) -> bool:
    key = {"tenant_id": {"S": tenant}, "program_id": {"S": program}}
    return "Item" in client.get_item(TableName=PROGRAMS, Key=key, ConsistentRead=True)


def test_a_hot_partition_key_is_refused_as_dynamodb_refuses_it_and_nothing_is_written(scaled: Rig) -> None:
    # GIVEN one tenant key that takes 1 write unit per second (1,000 / scale 1,000)
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t1", "p1"))
    # WHEN a second write lands on the same key in the same second
    with pytest.raises(ClientError) as refused:
        scaled.client.put_item(TableName=PROGRAMS, Item=_program("t1", "p2"))
    # THEN DynamoDB's answer for a hot key, and the item is not there
    error: dict[str, Any] = dict(refused.value.response)
    assert error["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert error["ThrottlingReasons"][0]["reason"] == "TableWriteKeyRangeThroughputExceeded"
    assert error["ThrottlingReasons"][0]["resource"].endswith(f":table/{PROGRAMS}")
    assert not _exists(scaled.client, "t1", "p2")
    # another key of the same table is served, and the hot key again a second later
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t2", "p1"))
    scaled.at(1_001.5)
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t1", "p2"))
    assert _exists(scaled.client, "t1", "p2")
    assert scaled.capacity.stats.throttled == {"ProvisionedThroughputExceededException": 1}


def test_a_throttled_transaction_is_cancelled_with_throttling_reasons_and_rolled_back(scaled: Rig) -> None:
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t1", "p0"))  # the tenant key is spent
    with pytest.raises(ClientError) as refused:
        scaled.client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": SESSIONS, "Item": {"tenant_id": {"S": "t9"}, "session_id": {"S": "s1"}}}},
                {"Put": {"TableName": PROGRAMS, "Item": _program("t1", "p1")}},
            ]
        )
    error = refused.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert [reason["Code"] for reason in error["CancellationReasons"]] == ["None", "ThrottlingError"]
    # the session the transaction wrote first was undone with it
    session = {"tenant_id": {"S": "t9"}, "session_id": {"S": "s1"}}
    assert "Item" not in scaled.client.get_item(TableName=SESSIONS, Key=session, ConsistentRead=True)
    assert not _exists(scaled.client, "t1", "p1")


def test_an_index_short_of_capacity_refuses_the_base_table_write(scaled: Rig) -> None:
    # GIVEN writes to different tenants (their own table keys) that all land on one index shard key
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t1", "p1", shard="3"))
    with pytest.raises(ClientError) as refused:
        scaled.client.put_item(TableName=PROGRAMS, Item=_program("t2", "p1", shard="3"))
    # THEN the base-table write is refused for the index (back-pressure)
    response: dict[str, Any] = dict(refused.value.response)
    reason = response["ThrottlingReasons"][0]
    assert reason["reason"] == "IndexWriteKeyRangeThroughputExceeded"
    assert reason["resource"].endswith(f":table/{PROGRAMS}/index/due-by-window-end")
    assert not _exists(scaled.client, "t2", "p1")
    # a write that stays out of the sparse index is not held by it
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t3", "p1"))


def test_a_new_table_starts_at_its_on_demand_rate_and_a_declared_warm_throughput_starts_higher(
    template: Template,
) -> None:
    # 4,000 write units/s per new table at scale 1,000: 4 per second over distinct keys
    for settings, admitted in (
        (CapacitySettings(start=Start.COLD, scale=1_000), 4),
        (CapacitySettings(start=Start.WARM, scale=1_000, declared={PROGRAMS: 8_000}), 8),
    ):
        for rig in _rig(template, settings):
            refusals = []
            for tenant in range(12):
                try:
                    rig.client.put_item(TableName=PROGRAMS, Item=_program(f"t{tenant}", "p1"))
                except ClientError as error:
                    refusals.append(error.response["Error"]["Code"])
            assert refusals == ["ThrottlingException"] * (12 - admitted)


def test_the_on_demand_ceiling_grows_to_double_a_peak_held_long_enough_ago(template: Template) -> None:
    settings = CapacitySettings(start=Start.COLD, scale=1_000, growth_seconds=60)
    for rig in _rig(template, settings):
        for tenant in range(4):  # a peak of 4 units in one second
            rig.client.put_item(TableName=PROGRAMS, Item=_program(f"t{tenant}", "p1"))
        rig.at(1_100.0)  # more than growth_seconds later: twice the peak is served at once
        written = 0
        for tenant in range(4, 20):
            try:
                rig.client.put_item(TableName=PROGRAMS, Item=_program(f"t{tenant}", "p1"))
                written += 1
            except ClientError:
                pass
        assert written == 8
        assert rig.capacity.peaks()[PROGRAMS] == 8_000


def test_capacity_words_from_the_command_line_are_checked() -> None:
    assert capacity_settings(None) is None
    warm = capacity_settings("warm", 10, warm_units=12_000)
    assert warm is not None
    assert warm.starting_rate(PROGRAMS) == 12_000
    with pytest.raises(ValueError, match="capacity must be one of cold, warm"):
        capacity_settings("tepid")
    with pytest.raises(ValueError, match="scale must be positive"):
        CapacitySettings(scale=0)
