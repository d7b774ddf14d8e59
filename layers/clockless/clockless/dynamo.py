"""Small helpers for the PynamoDB repositories the jobs use."""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pynamodb.exceptions import AttributeDeserializationError
from pynamodb.models import Model
from pynamodb.pagination import ResultIterator

from clockless.errors import ArgumentError, DeclarationError
from clockless.items import RowError

_ATTRIBUTE_NAMED = re.compile(r"'([^']+)'")


def bind_table(model: type[Model], table_name: str) -> None:
    """Point a model at its table, resolved from the environment when first used, not at import.

    The connection is dropped when the table changes so the next request uses the current
    endpoint (`AWS_ENDPOINT_URL_DYNAMODB` is read by botocore when the client is made).
    """
    if getattr(model.Meta, "table_name", None) != table_name:
        model.Meta.table_name = table_name
        model._connection = None


def shard_for(key: str, shards: int) -> str:
    """A stable shard id out of `shards` from the key's CRC-32: `bucketed_key`'s bucket (a table's
    primary key, so it never changes). An index's shard is `index_shard_for`."""
    return str(zlib.crc32(key.encode("utf-8")) % shards)


def index_shard_for(key: str, shards: int) -> str:
    """A stable shard id for a sparse index's partition key, spreading writes over `shards` values.

    From BLAKE2b, not CRC-32: CRC-32 is affine, so for one tenant's items (`<tenant>#<id>`, equal
    lengths) `crc32(key) % 2**k` is `crc32(id) % 2**k` xor a constant, and every item of a shard would
    sit in one bucket of its tenant (`bucketed_key`): a shard's worker would write one tenant key
    only. Any value below `shards` is read, so the hash may change without moving a stored item."""
    if shards < 1:
        raise DeclarationError(f"an index needs at least one shard, got {shards}")
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return str(int.from_bytes(digest, "big") % shards)


def bucketed_key(tenant_id: str, item_id: str, buckets: int) -> str:
    """A tenant's partition key value spread over `buckets` values, `<tenant>#<bucket>`, the bucket
    from the item's own id: one tenant's writes land on that many keys (so on as many physical
    partitions as the hash gives them) instead of one key's 1,000 write units per second, and a
    lookup by (tenant, item) still names its one key (docs/fan-out.md#a-whale-tenant)."""
    if buckets < 1:
        raise DeclarationError(f"a tenant's key needs at least one bucket, got {buckets}")
    return f"{tenant_id}#{shard_for(item_id, buckets)}"


def tenant_keys(tenant_id: str, buckets: int) -> tuple[str, ...]:
    """Every partition key value one tenant's items are under: a read by tenant queries each."""
    if buckets < 1:
        raise DeclarationError(f"a tenant's key needs at least one bucket, got {buckets}")
    return tuple(f"{tenant_id}#{bucket}" for bucket in range(buckets))


def tenant_of(key: str) -> str:
    """The tenant a `bucketed_key` names."""
    tenant, separator, _ = key.rpartition("#")
    if not separator or not tenant:
        raise ArgumentError(f"a bucketed tenant key is <tenant>#<bucket>, got {key!r}")
    return tenant


def bucketed_row_key(row: Mapping[str, Any], tenant_key: str, item_id: str) -> str:
    """A raw row's item key, `<tenant>#<item>`, read from its bucketed tenant key and its item id:
    the key an operator knows the item by, whichever bucket holds it."""
    return f"{tenant_of(row_key_text(row, tenant_key))}#{row_key_text(row, item_id)}"


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


def raw_page(results: ResultIterator[Any]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One page (one Query) of a PynamoDB query, its rows as the table holds them (undecoded: a
    row that does not decode must fail alone, not the page) and the key the next page starts at."""
    page = next(results.page_iter, None) or {}
    return list(page.get("Items") or []), results.page_iter.last_evaluated_key


def raw_rows(query: Callable[..., ResultIterator[Any]]) -> Iterator[dict[str, Any]]:
    """Every row of a PynamoDB query, undecoded, page by page: `query(last_evaluated_key=cursor)`
    is one page's query (a model's or an index's `query` with its key and condition bound)."""
    cursor: dict[str, Any] | None = None
    while True:
        rows, cursor = raw_page(query(last_evaluated_key=cursor))
        yield from rows
        if cursor is None:
            return


def row_key_text(row: Mapping[str, Any], *names: str) -> str:
    """A raw row's key (its key attributes, which DynamoDB types itself), joined by '#'."""
    return "#".join(str(next(iter(row[name].values()))) for name in names)


def decode_row[T](model: type[Model], row: Mapping[str, Any], key: str, convert: Callable[[Any], T]) -> T:
    """A raw row through its model into an item; any failure is a `RowError` naming the table,
    the row's key and the field (never "malformed tick": a row is not a tick)."""
    where = f"{getattr(model.Meta, 'table_name', model.__name__)} {key}"
    try:
        return convert(model.from_raw_data(dict(row)))
    except RowError:
        raise
    except AttributeDeserializationError as error:
        named = _ATTRIBUTE_NAMED.search(str(error))
        raise RowError(where, named.group(1) if named else "?", f"has the wrong type: {error}") from None
    except Exception as error:
        field = getattr(error, "field", None)
        problem = getattr(error, "problem", None) or f"{type(error).__name__}: {error}"
        raise RowError(where, field if isinstance(field, str) else "?", str(problem)) from None
