"""What a DynamoDB read costs, in read units, and where it lands: the table or "table/index" it
reads and the partition key value it reads under, priced as the developer guide prices it ("Read
consistency", "Capacity unit consumption for read operations"): 1 unit per 4 KB (4,096 bytes) of
what a Query or Scan returned, rounded up once per request, and of each item a GetItem or
BatchGetItem returned, rounded up per item, at least 1 for a GetItem that finds nothing; half of
that for an eventually consistent read (every read of a global secondary index).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from clockless_tools.local.units import MotoTables, item_size

READ_UNIT_BYTES: Final = 4096
READ_OPERATIONS: Final = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})
_EQUALS: Final = re.compile(r"(#?[A-Za-z0-9_.]+)\s*=\s*(:[A-Za-z0-9_]+)")

Charge = tuple[str, Any, float]  # (table or "table/index", the partition key's wire value or None, units)


def read_units(operation: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> float:
    """Read units a request consumed, from what it returned (a filtered Scan's is a floor: its
    filter runs after the read)."""
    factor = 1.0 if request.get("ConsistentRead") else 0.5
    if operation in ("Query", "Scan"):
        return _rounded(sum(item_size(item) for item in response.get("Items") or [])) * factor
    if operation == "GetItem":
        item = response.get("Item")
        return _rounded(item_size(item) if item else 0) * factor
    if operation == "BatchGetItem":
        items = [item for found in (response.get("Responses") or {}).values() for item in found]
        return sum(_rounded(item_size(item)) * factor for item in items)
    return 0.0


def read_charges(
    operation: str, request: Mapping[str, Any], response: Mapping[str, Any], tables: MotoTables
) -> list[Charge]:
    """Each part of a read's units with the resource and the partition key value it read under.
    A Scan reads every partition in turn: it is charged to the table or index as a whole."""
    if operation == "BatchGetItem":
        charges: list[Charge] = []
        for table, items in (response.get("Responses") or {}).items():
            consistent = bool(((request.get("RequestItems") or {}).get(table) or {}).get("ConsistentRead"))
            partition_key = tables.shape(table)[0][0]
            for item in items:
                units = _rounded(item_size(item)) * (1.0 if consistent else 0.5)
                charges.append((table, item[partition_key], units))
        return charges
    table = str(request["TableName"])
    index = request.get("IndexName")
    resource = f"{table}/{index}" if index else table
    units = read_units(operation, request, response)
    if operation == "Scan":
        return [(resource, None, units)]
    table_keys, indexes = tables.shape(table)
    partition_key = next(shape.keys[0] for shape in indexes if shape.name == index) if index else table_keys[0]
    if operation == "GetItem":
        return [(resource, request["Key"][partition_key], units)]
    return [(resource, _queried_value(request, partition_key), units)]


def _queried_value(request: Mapping[str, Any], partition_key: str) -> Any:
    """The partition key value a Query's key condition names (`#k = :v` or `k = :v`)."""
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    for name, placeholder in _EQUALS.findall(str(request.get("KeyConditionExpression") or "")):
        if names.get(name, name) == partition_key and placeholder in values:
            return values[placeholder]
    conditions = request.get("KeyConditions") or {}
    if partition_key in conditions:
        return conditions[partition_key]["AttributeValueList"][0]
    return None


def _rounded(size: int) -> int:
    return max(1, math.ceil(size / READ_UNIT_BYTES))
