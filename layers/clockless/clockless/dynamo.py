"""Small helpers for the PynamoDB repositories the jobs use."""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
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


def partition_keys(partition: int, partitions: int, keys: int) -> tuple[str, ...]:
    """The index shard keys one partition of a fanned-out tick reads: of the `keys` values a job
    writes (`index_shard_for(..., keys)`), every `k` with `k % partitions == partition`.

    Many keys even out how they hash onto the index's physical partitions (each takes about 1,000
    write units per second); few partitions keep the workers to the template's
    `MaximumConcurrency`. Keys 0 to `partitions - 1` are each read by the partition of the same
    number, so rows written when a job wrote one key per partition are still read after its key
    count is raised (docs/fan-out.md#index-keys-and-partitions)."""
    if partitions < 1 or keys < partitions:
        raise DeclarationError(f"an index needs at least one key per partition, got {keys} keys for {partitions}")
    if not 0 <= partition < partitions:
        raise ArgumentError(f"partition must be 0..{partitions - 1}, got {partition}")
    return tuple(str(key) for key in range(partition, keys, partitions))


# A partition's cursor over its keys: the key it is in, and where in it (None: from its start).
CURSOR_KEY = "key"
CURSOR_AFTER = "after"


Rows = tuple[list[dict[str, Any]], dict[str, Any] | None]  # a page's rows, and the key after them


def keys_page(
    query: Callable[[str, int, dict[str, Any] | None], Rows],
    keys: Sequence[str],
    cursor: Mapping[str, Any] | None,
    limit: int,
    *,
    hash_key: str,
) -> Rows:
    """Up to `limit` rows of a partition's index keys, read in order from `cursor`, and the cursor
    after them (None: every key read). `query(key, limit, start)` is one page's Query of one key:
    its rows and its `LastEvaluatedKey` (`raw_page` of a PynamoDB query).

    A key that ends before the page is full hands the rest of the page to the next key, so a
    partition of many mostly empty keys costs a Query per key, not a page (and a cursor write)
    per key. A cursor without `key` is a page's `LastEvaluatedKey` as a partition of one key
    stored it before its job's keys were raised: it names its key as `hash_key`."""
    position, after = _cursor_position(keys, cursor, hash_key)
    rows: list[dict[str, Any]] = []
    while True:
        found, last = query(keys[position], limit - len(rows), after)
        rows.extend(found)
        if last is not None:
            return rows, {CURSOR_KEY: keys[position], CURSOR_AFTER: last}
        position += 1
        if position == len(keys):
            return rows, None
        if len(rows) >= limit:
            return rows, {CURSOR_KEY: keys[position], CURSOR_AFTER: None}
        after = None


def _cursor_position(
    keys: Sequence[str], cursor: Mapping[str, Any] | None, hash_key: str
) -> tuple[int, dict[str, Any] | None]:
    if cursor is None:
        return 0, None
    if CURSOR_KEY in cursor:
        key, after = cursor[CURSOR_KEY], cursor.get(CURSOR_AFTER)
    else:
        key, after = next(iter(cursor.get(hash_key, {}).values()), None), dict(cursor)
    if key not in keys or not (after is None or isinstance(after, Mapping)):
        raise ArgumentError(f"cursor is not one of this partition's keys {keys[0]}..{keys[-1]}: {dict(cursor)!r}")
    return keys.index(key), None if after is None else dict(after)


def keys_rows(
    query: Callable[[str], Callable[..., ResultIterator[Any]]], keys: Sequence[str]
) -> Iterator[dict[str, Any]]:
    """Every row of each of a partition's keys, undecoded (`raw_rows` of `query(key)`)."""
    for key in keys:
        yield from raw_rows(query(key))


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
