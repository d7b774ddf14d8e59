"""Both jobs' fanned-out work as raw low-level requests, for the bench: a shard of the sparse index
read page by page, and each item's conditional actions (a window's Put and its program's roll; a
session's Delete while still empty), the same keys, conditions and index queries the jobs' own
`PartitionWork` uses. It implements the kit's `PartitionWork`, so the kit's writer and worker run
it; it is the floor the jobs' PynamoDB-built actions are compared with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Final

from clockless import format_scheduled_time
from clockless.dynamo import Rows, keys_page, tenant_of
from clockless.fanout import Page
from clockless_tools.bench.harness import Harness
from clockless_tools.bench.results import WINDOW_JOB
from session_cleanup.repository import EMPTY_INDEX_SHARDS, SessionModel, empty_index_keys
from window_generation.repository import DUE_INDEX_SHARDS, STATUS_ACTIVE, ProgramModel, due_index_keys

Item = dict[str, Any]
SHARDS: Final = {WINDOW_JOB: DUE_INDEX_SHARDS, "session-cleanup": EMPTY_INDEX_SHARDS}


@dataclass
class RawWork:
    """`PartitionWork` for one job over the harness's tables; partitions are the job's own, each
    reading its index keys as the job's does (`clockless.dynamo.keys_page`)."""

    harness: Harness
    job: str

    @property
    def shards(self) -> int:
        return SHARDS[self.job]

    def keys(self, partition: str) -> tuple[str, ...]:
        return due_index_keys(partition) if self.job == WINDOW_JOB else empty_index_keys(partition)

    def query(self, key: str) -> dict[str, Any]:
        if self.job == WINDOW_JOB:
            return {
                "TableName": self.harness.window_settings.programs_table,
                "IndexName": ProgramModel.due_index.Meta.index_name,
                "KeyConditionExpression": "due_shard = :shard AND current_window_end <= :date",
                "ExpressionAttributeValues": {
                    ":shard": {"S": key},
                    ":date": {"S": self.harness.layout.business_date.isoformat()},
                },
            }
        cutoff = format_scheduled_time(self.harness.layout.cleanup_tick - self.harness.layout.grace)
        return {
            "TableName": self.harness.cleanup_settings.sessions_table,
            "IndexName": SessionModel.empty_index.Meta.index_name,
            "KeyConditionExpression": "empty_shard = :shard AND started_at <= :cutoff",
            "ExpressionAttributeValues": {":shard": {"S": key}, ":cutoff": {"S": cutoff}},
        }

    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> Page[Item]:
        def query(key: str, left: int, start: dict[str, Any] | None) -> Rows:
            request = {**self.query(key), "Limit": left}
            if start is not None:
                request["ExclusiveStartKey"] = start
            page = self.harness.client.query(**request)
            return list(page["Items"]), page.get("LastEvaluatedKey")

        hash_key = "due_shard" if self.job == WINDOW_JOB else "empty_shard"
        rows, next_cursor = keys_page(query, self.keys(partition), cursor, limit, hash_key=hash_key)
        return Page(items=rows, cursor=next_cursor)

    def read_all(self, partition: str) -> list[Item]:
        items: list[Item] = []
        cursor: Mapping[str, Any] | None = None
        while True:
            page = self.read(partition, {}, cursor, 1_000)
            items += page.items
            if page.cursor is None:
                return items
            cursor = page.cursor

    def writes(self, item: Item, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]:
        if self.job != WINDOW_JOB:
            delete = {
                "TableName": self.harness.cleanup_settings.sessions_table,
                "Key": {"tenant_key": item["tenant_key"], "session_id": item["session_id"]},
                "ConditionExpression": "exercise_count = :zero",
                "ExpressionAttributeValues": {":zero": {"N": "0"}},
            }
            return [{"Delete": delete}]
        settings = self.harness.window_settings
        tenant, program_id = tenant_of(item["tenant_key"]["S"]), item["program_id"]["S"]
        start = item["current_window_end"]["S"]
        end = (date.fromisoformat(start) + timedelta(days=int(item["window_length_days"]["N"]))).isoformat()
        window = {
            "program_key": {"S": f"{tenant}#{program_id}"},
            "start_date": {"S": start},
            "tenant_id": {"S": tenant},
            "program_id": {"S": program_id},
            "end_date": {"S": end},
            "created_for_tick": {"S": tick_key},
        }
        put = {
            "TableName": settings.windows_table,
            "Item": window,
            "ConditionExpression": "attribute_not_exists(program_key)",
        }
        roll = {
            "TableName": settings.programs_table,
            "Key": {"tenant_key": item["tenant_key"], "program_id": item["program_id"]},
            "UpdateExpression": "SET current_window_end = :end",
            "ConditionExpression": "current_window_end = :read AND #status = :active",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {":end": {"S": end}, ":read": {"S": start}, ":active": {"S": STATUS_ACTIVE}},
        }
        return [{"Put": put}, {"Update": roll}]

    @property
    def table(self) -> str:
        return str(self.query("0")["TableName"])

    def row_key(self, row: Item) -> str:
        return self.item_key(row)

    def item_of(self, row: Item) -> Item:
        return row  # the raw row is the item: the floor decodes nothing

    def item_key(self, item: Item) -> str:
        second = "program_id" if self.job == WINDOW_JOB else "session_id"
        return f"{tenant_of(item['tenant_key']['S'])}#{item[second]['S']}"

    def encode(self, item: Item) -> dict[str, Any]:
        return dict(item)

    def decode(self, data: Mapping[str, Any]) -> Item:
        return dict(data)
