"""Small helpers for the PynamoDB repositories the jobs use."""

from __future__ import annotations

import zlib
from typing import Any

from pynamodb.models import Model


def bind_table(model: type[Model], table_name: str) -> None:
    """Point a model at its table, resolved from the environment when first used, not at import.

    The connection is dropped when the table changes so the next request uses the current
    endpoint (`AWS_ENDPOINT_URL_DYNAMODB` is read by botocore when the client is made).
    """
    if getattr(model.Meta, "table_name", None) != table_name:
        model.Meta.table_name = table_name
        model._connection = None


def shard_for(key: str, shards: int) -> str:
    """A stable shard id for a sparse index's partition key, spreading writes over `shards` partitions."""
    return str(zlib.crc32(key.encode("utf-8")) % shards)


def is_condition_failure(error: Any) -> bool:
    """True when a PynamoDB write or transaction failed only because a condition did not hold."""
    cause = getattr(error, "cause_response_code", None)
    if cause == "ConditionalCheckFailedException":
        return True
    if cause == "TransactionCanceledException":
        reasons = getattr(error, "cancellation_reasons", None) or []
        codes = {reason.code for reason in reasons if reason is not None}
        return bool(codes) and codes <= {"ConditionalCheckFailed", "None"}
    return False
