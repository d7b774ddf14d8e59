"""moto, for a bench: its DynamoDB state in this process, and capacity reported by size. (Transactions that
snapshot only the items they touch: `clockless_tools.local.moto_transactions`.)"""

from __future__ import annotations

from typing import Any

from clockless_tools.local.units import item_size


def moto_capacity_is_size_based(client: Any, table: str, index: str, shard_attribute: str) -> dict[str, Any]:
    """Ask moto for ConsumedCapacity on a GSI query that reads many items and on one that reads one.

    The shard asked is the first holding more than one item: which shard that is follows the hash."""
    answers: dict[str, Any] = {}
    for shard in range(256):
        answers = _capacity_answers(client, table, index, shard_attribute, str(shard))
        if answers["all_items"]["items"] > 1:
            break
    return answers


def _capacity_answers(client: Any, table: str, index: str, shard_attribute: str, shard: str) -> dict[str, Any]:
    answers = {}
    for label, limit in (("one_item", 1), ("all_items", None)):
        request: dict[str, Any] = {
            "TableName": table,
            "IndexName": index,
            "KeyConditionExpression": "#shard = :shard",
            "ExpressionAttributeNames": {"#shard": shard_attribute},
            "ExpressionAttributeValues": {":shard": {"S": shard}},
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
