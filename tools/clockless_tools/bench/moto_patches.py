"""moto, for a bench: transactions that snapshot only the items they touch, and capacity reported by size."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

from clockless_tools.local.units import item_size


@contextlib.contextmanager
def moto_transactions_snapshot_touched_items() -> Iterator[None]:
    """moto copies every table a transaction names, all its items, so that it can roll back: ~0.2 s
    per transaction at 10k items, a cost DynamoDB does not have, which would swamp what we measure.
    While active, a transaction snapshots only the items it names and restores exactly those when
    it fails; its outcome is the same. Only the bench uses it (the tests run stock moto)."""
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    class TablesAreNotCopied:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    stock = models.DynamoDBBackend.transact_write_items

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        touched = [snapshot for entry in transact_items for snapshot in _snapshots(backend, entry)]
        try:
            stock(backend, transact_items)
        except BaseException:
            for table_name, key, item in reversed(touched):
                if item is not None:
                    backend.get_table(table_name).put_item(item.to_json()["Attributes"])
                elif backend.get_item(table_name, key) is not None:
                    backend.delete_item(table_name, key)
            raise

    setattr(models, "copy", TablesAreNotCopied)  # noqa: B010 - the module moto copies tables with
    setattr(models.DynamoDBBackend, "transact_write_items", transact_write_items)  # noqa: B010
    try:
        yield
    finally:
        setattr(models.DynamoDBBackend, "transact_write_items", stock)  # noqa: B010
        setattr(models, "copy", copy)  # noqa: B010


def _snapshots(backend: Any, entry: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], Any]]:
    for operation_type, operation in entry.items():
        table_name = operation.get("TableName")
        if table_name not in backend.tables:
            continue  # moto rejects it before writing anything
        if operation_type == "Put":
            table = backend.get_table(table_name)
            key_names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
            if not all(name in operation["Item"] for name in key_names):
                continue
            key = {name: operation["Item"][name] for name in key_names}
        else:
            key = operation["Key"]
        yield table_name, key, copy.deepcopy(backend.get_item(table_name, key))


def moto_capacity_is_size_based(client: Any, table: str, index: str, shard_attribute: str) -> dict[str, Any]:
    """Ask moto for ConsumedCapacity on a GSI query that reads many items and on one that reads one."""
    answers = {}
    for label, limit in (("one_item", 1), ("all_items", None)):
        request: dict[str, Any] = {
            "TableName": table,
            "IndexName": index,
            "KeyConditionExpression": "#shard = :shard",
            "ExpressionAttributeNames": {"#shard": shard_attribute},
            "ExpressionAttributeValues": {":shard": {"S": "0"}},
            "ReturnConsumedCapacity": "TOTAL",
        }
        if limit is not None:
            request["Limit"] = limit
        response = client.query(**request)
        answers[label] = {
            "items": response["Count"],
            "bytes": sum(item_size(item) for item in response["Items"]),
            "moto_capacity_units": (response.get("ConsumedCapacity") or {}).get("CapacityUnits"),
        }
    answers["size_based"] = answers["one_item"]["moto_capacity_units"] != answers["all_items"]["moto_capacity_units"]
    return answers
