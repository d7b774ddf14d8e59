"""The capacity-faithful embedded DynamoDB (clockless_tools.local.capacity): DynamoDB's write
throughput rules in front of moto, on the template's own tables, with the refusals DynamoDB gives."""

from __future__ import annotations

import itertools
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
from clockless_tools.local.partitions import HashRanges, string_key_place
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
    """Cold start at scale 1,000: 4 write units/s per table and index, on 4 partitions of 1 each."""
    yield from _rig(template, CapacitySettings(start=Start.COLD, scale=1_000))


PROGRAMS = LocalNames().table_name("ProgramsTable")
SESSIONS = LocalNames().table_name("SessionsTable")


def _program(tenant: str, program: str, shard: str | None = None, end: str = "2026-12-01") -> dict[str, Any]:
    item = {"tenant_key": {"S": tenant}, "program_id": {"S": program}, "current_window_end": {"S": end}}
    if shard is not None:
        item["due_shard"] = {"S": shard}
    return item


def _exists(client: Any, tenant: str, program: str) -> bool:
    key = {"tenant_key": {"S": tenant}, "program_id": {"S": program}}
    return "Item" in client.get_item(TableName=PROGRAMS, Key=key, ConsistentRead=True)


def _tenants(count: int, partitions: int, index: int, prefix: str = "t") -> list[str]:
    """`count` tenant ids whose key lands on partition `index` of a resource with `partitions`."""
    ranges = HashRanges(partitions)
    found = (f"{prefix}{n}" for n in range(100_000))
    return list(itertools.islice((t for t in found if ranges.index(string_key_place(t)) == index), count))


def _refusals(rig: Rig, items: list[dict[str, Any]]) -> list[str]:
    codes = []
    for item in items:
        try:
            rig.client.put_item(TableName=PROGRAMS, Item=item)
        except ClientError as error:
            codes.append(str(error.response["Error"]["Code"]))
    return codes


def test_two_keys_on_one_partition_share_its_limit_and_are_refused_as_dynamodb_refuses_a_hot_partition(
    scaled: Rig,
) -> None:
    # GIVEN a new table's 4 partitions of 1 write unit per second (1,000 / scale 1,000), two tenant
    # keys that hash onto partition 0 and one that hashes onto partition 1
    first, second = _tenants(2, 4, 0)
    (elsewhere,) = _tenants(1, 4, 1)
    scaled.client.put_item(TableName=PROGRAMS, Item=_program(first, "p1"))
    # WHEN the other key of the same partition is written in the same second
    with pytest.raises(ClientError) as refused:
        scaled.client.put_item(TableName=PROGRAMS, Item=_program(second, "p2"))
    # THEN DynamoDB's answer for a hot partition, and the item is not there
    error: dict[str, Any] = dict(refused.value.response)
    assert error["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert error["ThrottlingReasons"][0]["reason"] == "TableWriteKeyRangeThroughputExceeded"
    assert error["ThrottlingReasons"][0]["resource"].endswith(f":table/{PROGRAMS}")
    assert not _exists(scaled.client, second, "p2")
    # a key on another partition is served, and the hot partition again a second later
    scaled.client.put_item(TableName=PROGRAMS, Item=_program(elsewhere, "p1"))
    scaled.at(1_001.5)
    scaled.client.put_item(TableName=PROGRAMS, Item=_program(second, "p2"))
    assert _exists(scaled.client, second, "p2")
    assert scaled.capacity.stats.throttled == {"ProvisionedThroughputExceededException": 1}
    placed = scaled.capacity.partitions()[PROGRAMS]
    assert placed["partitions"] == 4
    assert placed["refusals_by_partition"] == {"0": 1}
    assert placed["keys_by_partition"]["0"] == 2  # the two written; the refused one was seen too
    listed = scaled.capacity.partitions(keys=True)[PROGRAMS]["keys_by_partition"]
    assert sorted(listed["0"]) == sorted(f'{{"S": "{tenant}"}}' for tenant in (first, second))


def test_a_throttled_transaction_is_cancelled_with_throttling_reasons_and_rolled_back(scaled: Rig) -> None:
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t1", "p0"))  # the tenant's partition is spent
    with pytest.raises(ClientError) as refused:
        scaled.client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": SESSIONS, "Item": {"tenant_key": {"S": "t9"}, "session_id": {"S": "s1"}}}},
                {"Put": {"TableName": PROGRAMS, "Item": _program("t1", "p1")}},
            ]
        )
    error = refused.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert [reason["Code"] for reason in error["CancellationReasons"]] == ["None", "ThrottlingError"]
    # the session the transaction wrote first was undone with it
    session = {"tenant_key": {"S": "t9"}, "session_id": {"S": "s1"}}
    assert "Item" not in scaled.client.get_item(TableName=SESSIONS, Key=session, ConsistentRead=True)
    assert not _exists(scaled.client, "t1", "p1")


def test_an_index_short_of_capacity_refuses_the_base_table_write(scaled: Rig) -> None:
    # GIVEN writes to tenants on different table partitions whose index entries land on one index
    # partition (two shard keys hashed together)
    tenants = [_tenants(1, 4, index)[0] for index in range(2)]
    shards = HashRanges(4)
    first, second = [s for s in map(str, range(1_000)) if shards.index(string_key_place(s)) == 2][:2]
    scaled.client.put_item(TableName=PROGRAMS, Item=_program(tenants[0], "p1", shard=first))
    with pytest.raises(ClientError) as refused:
        scaled.client.put_item(TableName=PROGRAMS, Item=_program(tenants[1], "p1", shard=second))
    # THEN the base-table write is refused for the index (back-pressure)
    response: dict[str, Any] = dict(refused.value.response)
    reason = response["ThrottlingReasons"][0]
    assert reason["reason"] == "IndexWriteKeyRangeThroughputExceeded"
    assert reason["resource"].endswith(f":table/{PROGRAMS}/index/due-by-window-end")
    assert not _exists(scaled.client, tenants[1], "p1")
    # a write that stays out of the sparse index is not held by it
    (other,) = _tenants(1, 4, 3)
    scaled.client.put_item(TableName=PROGRAMS, Item=_program(other, "p1"))


def test_a_new_table_starts_at_its_on_demand_rate_and_a_declared_warm_throughput_starts_higher(
    template: Template,
) -> None:
    # 4,000 write units/s per new table at scale 1,000 (4 partitions); 8,000 declared: 8 partitions.
    # One write on each partition, twice over: the table's rate, not a partition, refuses the rest.
    for settings, admitted in (
        (CapacitySettings(start=Start.COLD, scale=1_000), 4),
        (CapacitySettings(start=Start.WARM, scale=1_000, declared={PROGRAMS: 8_000}), 8),
    ):
        for rig in _rig(template, settings):
            tenants = [_tenants(2, admitted, index) for index in range(admitted)]
            items = [_program(pair[round_], "p1") for round_ in range(2) for pair in tenants]
            assert _refusals(rig, items) == ["ThrottlingException"] * admitted
            assert rig.capacity.partitions()[PROGRAMS]["partitions"] == admitted


def test_partitions_follow_the_read_throughput_and_burst_capacity_carries_the_table_past_its_rate(
    template: Template,
) -> None:
    # GIVEN a table warmed to 4,000 writes but 24,000 reads a second: 8 partitions (3,000 reads
    # each), whose writes the table's 4,000 still bounds
    settings = CapacitySettings(
        start=Start.WARM, scale=1_000, declared={PROGRAMS: 4_000}, declared_reads={PROGRAMS: 24_000}
    )
    for rig in _rig(template, settings):
        tenants = [_tenants(2, 8, index) for index in range(8)]
        assert _refusals(rig, [_program(pair[0], "p1") for pair in tenants]) == ["ThrottlingException"] * 4
        assert rig.capacity.partitions()[PROGRAMS]["partitions"] == 8
        # WHEN the table stays idle for 10 s (40 units unused at 4 a second, kept as burst)
        rig.at(1_010.0)
        # THEN one write on each of its 8 partitions passes at once: burst, never past a partition
        assert _refusals(rig, [_program(pair[1], "p1") for pair in tenants]) == []
        assert _refusals(rig, [_program(tenants[0][0], "p2")]) == ["ProvisionedThroughputExceededException"]


def test_a_hot_partition_refuses_reads_past_its_3000_read_units(scaled: Rig) -> None:
    scaled.client.put_item(TableName=PROGRAMS, Item=_program("t1", "p1"))
    key = {"tenant_key": {"S": "t1"}, "program_id": {"S": "p1"}}
    for _ in range(3):  # 3 read units a second on the partition (3,000 / 1,000), 1 per consistent read
        scaled.client.get_item(TableName=PROGRAMS, Key=key, ConsistentRead=True)
    with pytest.raises(ClientError) as refused:
        scaled.client.get_item(TableName=PROGRAMS, Key=key, ConsistentRead=True)
    response: dict[str, Any] = dict(refused.value.response)
    assert response["ThrottlingReasons"][0]["reason"] == "TableReadKeyRangeThroughputExceeded"
    # a Query under the same key is charged to the same partition
    with pytest.raises(ClientError):
        scaled.client.query(
            TableName=PROGRAMS,
            KeyConditionExpression="#t = :t",
            ExpressionAttributeNames={"#t": "tenant_key"},
            ExpressionAttributeValues={":t": {"S": "t1"}},
        )
    assert scaled.capacity.read_consumed()[PROGRAMS] == 3_000


def test_split_for_heat_is_a_declared_option_that_parts_two_hot_keys(template: Template) -> None:
    first, second = _tenants(2, 4, 0)
    for split_after, served_at_last in ((None, 1), (5.0, 2)):
        settings = CapacitySettings(start=Start.COLD, scale=1_000, split_after_seconds=split_after)
        for rig in _rig(template, settings):
            served = []
            for second_ in range(10):  # both hot keys written every second for 10 s
                rig.at(1_000.0 + second_)
                served.append(
                    2 - len(_refusals(rig, [_program(first, f"a{second_}"), _program(second, f"b{second_}")]))
                )
            assert served[-1] == served_at_last
            placed = rig.capacity.partitions()[PROGRAMS]
            assert (placed["partitions"], placed["splits"]) == ((4, 0) if split_after is None else (5, 1))


def test_the_on_demand_ceiling_grows_to_double_a_peak_held_long_enough_ago(template: Template) -> None:
    settings = CapacitySettings(start=Start.COLD, scale=1_000, growth_seconds=60)
    for rig in _rig(template, settings):
        tenants = [_tenants(3, 8, index) for index in range(8)]
        # a peak of 4 units in one second, one on each of the 4 partitions (8 ranges, two by two)
        assert _refusals(rig, [_program(tenants[i][0], "p1") for i in (0, 2, 4, 6)]) == []
        rig.at(1_100.0)  # more than growth_seconds later: twice the peak is served at once
        assert _refusals(rig, [_program(tenants[i][1], "p1") for i in range(8)]) == []
        assert _refusals(rig, [_program(tenants[0][2], "p1")]) != []
        assert rig.capacity.peaks()[PROGRAMS] == 8_000
        assert rig.capacity.partitions()[PROGRAMS]["partitions"] == 8  # every partition halved


def test_capacity_words_from_the_command_line_are_checked() -> None:
    assert capacity_settings(None) is None
    warm = capacity_settings("warm", 10, warm_units=12_000)
    assert warm is not None
    assert warm.starting_rate(PROGRAMS) == 12_000
    with pytest.raises(ValueError, match="capacity must be one of cold, warm"):
        capacity_settings("tepid")
    with pytest.raises(ValueError, match="scale must be positive"):
        CapacitySettings(scale=0)
