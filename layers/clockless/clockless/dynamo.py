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


def bucketed_key(tenant_id: str, item_id: str, buckets: int) -> str:
    """A tenant's partition key value spread over `buckets` values, `<tenant>#<bucket>`, the bucket
    from the item's own id: one tenant's writes land on that many keys (so on as many physical
    partitions as the hash gives them) instead of one key's 1,000 write units per second, and a
    lookup by (tenant, item) still names its one key (docs/fan-out.md#a-whale-tenant)."""
    if buckets < 1:
        raise ValueError(f"a tenant's key needs at least one bucket, got {buckets}")
    return f"{tenant_id}#{shard_for(item_id, buckets)}"


def tenant_keys(tenant_id: str, buckets: int) -> tuple[str, ...]:
    """Every partition key value one tenant's items are under: a read by tenant queries each."""
    if buckets < 1:
        raise ValueError(f"a tenant's key needs at least one bucket, got {buckets}")
    return tuple(f"{tenant_id}#{bucket}" for bucket in range(buckets))


def tenant_of(key: str) -> str:
    """The tenant a `bucketed_key` names."""
    tenant, separator, _ = key.rpartition("#")
    if not separator or not tenant:
        raise ValueError(f"a bucketed tenant key is <tenant>#<bucket>, got {key!r}")
    return tenant


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
