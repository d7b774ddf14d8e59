"""Workout sessions in DynamoDB: the `SessionStore` the sequential logic asks for, and the
`SessionPartitionWork` a fanned-out tick's workers apply, a partition reading its empty-index keys."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DeleteError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from clockless import MalformedTickError, format_scheduled_time, parse_scheduled_time
from clockless.dynamo import (
    Rows,
    bind_table,
    bucketed_key,
    bucketed_row_key,
    decode_row,
    index_shard_for,
    is_condition_failure,
    keys_page,
    keys_rows,
    partition_keys,
    raw_page,
    tenant_of,
)
from clockless.fanout import Page
from clockless.items import FieldError
from clockless.tick import MAX_YEAR, MIN_YEAR
from session_cleanup.logic import CleanupRange, SessionRef

# Empty sessions are spread over this many keys of the sparse index: each index partition key takes
# about 1,000 WCU/s, and hundreds of keys hash evenly enough onto the index's physical partitions
# (docs/fan-out.md#index-keys-and-partitions). Raising it is safe on a deployed table (every key a
# lower count wrote is still read; a session keeps its key until it leaves the index); lowering it
# is a migration (docs/fan-out.md#changing-a-jobs-shard-count).
EMPTY_INDEX_KEYS: Final = 256
# A fanned-out tick's partitions, one worker each: partition p reads the keys k with k % 16 == p
# (`clockless.dynamo.partition_keys`). template.yaml's Mappings.Jobs.SessionCleanup.Shards (the
# loop's 16) is the same number (rule shards-match-concurrency).
EMPTY_INDEX_SHARDS: Final = 16
EMPTY_INDEX_PARTITIONS: Final = tuple(str(shard) for shard in range(EMPTY_INDEX_SHARDS))
# One tenant's sessions are spread over this many partition key values (`<tenant>#<bucket>`, the
# bucket from the session id), so the biggest tenant is not held to one key's 1,000 write units
# per second (docs/fan-out.md#a-whale-tenant). Changing it moves every session to another key:
# that is a migration, not an edit.
TENANT_BUCKETS: Final = 16
# The first and last keys an instant can be (`parse_scheduled_time`'s years): an empty-index key that
# sorts outside them (`not-a-date`) is no instant, and no tick's range reaches it.
FIRST_INSTANT_KEY: Final = format_scheduled_time(datetime(MIN_YEAR, 1, 1, tzinfo=UTC))
LAST_INSTANT_KEY: Final = format_scheduled_time(datetime(MAX_YEAR, 12, 31, 23, 59, 59, tzinfo=UTC))


def sessions_partition_key(tenant_id: str, session_id: str) -> str:
    """The sessions table's partition key value of a session: its tenant's bucket."""
    return bucketed_key(tenant_id, session_id, TENANT_BUCKETS)


class EmptySessionIndex(GlobalSecondaryIndex["SessionModel"]):
    """Sparse: only sessions with no exercise carry `empty_shard`."""

    class Meta:
        index_name = "empty-by-start"
        projection = KeysOnlyProjection()

    empty_shard = UnicodeAttribute(hash_key=True)
    started_at = UnicodeAttribute(range_key=True)


class SessionModel(Model):
    class Meta:
        table_name = "sessions-table-not-bound"

    tenant_key = UnicodeAttribute(hash_key=True)  # sessions_partition_key
    session_id = UnicodeAttribute(range_key=True)
    started_at = UnicodeAttribute()
    exercise_count = NumberAttribute(default=0)
    empty_shard = UnicodeAttribute(null=True)
    empty_index = EmptySessionIndex()


class DynamoSessionStore:
    def __init__(self, sessions_table: str) -> None:
        bind_table(SessionModel, sessions_table)

    def find_empty_sessions(
        self, *, started_after: datetime | None, started_at_or_before: datetime
    ) -> Iterator[SessionRef]:
        condition = _started_in(CleanupRange(since=started_after, cutoff=started_at_or_before))
        for key in range(EMPTY_INDEX_KEYS):
            for item in SessionModel.empty_index.query(str(key), condition):
                yield _session_of(item)

    def delete_if_empty(self, session: SessionRef) -> bool:
        try:
            _session_ref(session).delete(condition=_STILL_EMPTY)
        except DeleteError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    # The platform's own write path, used by seeding and tests.
    def start_sessions(self, sessions: Iterable[SessionRef]) -> None:
        with SessionModel.batch_write() as batch:
            for session in sessions:
                batch.save(session_item(session))

    def log_exercise(self, tenant_id: str, session_id: str) -> None:
        """Count one exercise; the session leaves the empty index with its first one."""
        try:
            SessionModel(sessions_partition_key(tenant_id, session_id), session_id).update(
                actions=[SessionModel.exercise_count.add(1), SessionModel.empty_shard.remove()],
                condition=SessionModel.session_id.exists(),
            )
        except UpdateError as error:
            if is_condition_failure(error):
                raise LookupError(f"no session {tenant_id}/{session_id}") from None
            raise


class SessionPartitionWork:
    """A fanned-out cleanup tick: one partition per `EMPTY_INDEX_SHARDS`, each reading its
    empty-index keys (`empty_index_keys`), one item per session due for deletion. An item's write
    deletes the session only if it is still empty, so a session that gained an exercise since it
    was read is kept (and counted already done)."""

    def __init__(self, store: DynamoSessionStore) -> None:
        # The store binds the model to the table the environment names.
        self._store = store

    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> Page[dict[str, Any]]:
        """Up to `limit` empty sessions of the partition's keys in the tick's range, from `cursor`."""
        keys = empty_index_keys(partition)
        due = _started_in(range_param(params))

        def query(key: str, left: int, start: dict[str, Any] | None) -> Rows:
            return raw_page(SessionModel.empty_index.query(key, due, limit=left, last_evaluated_key=start))

        rows, next_cursor = keys_page(query, keys, cursor, limit, hash_key="empty_shard")
        return Page(items=rows, cursor=next_cursor)

    def read_outside(self, partition: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The partition's empty-index rows whose key sorts after every instant: one Query per key;
        and, when the tick's range has a start (the due read's BETWEEN leaves the low side open),
        those that sort before every instant: a second per key (the kit fails each by name,
        clockless.fanout.ReadsOutside)."""
        keys = empty_index_keys(partition)
        above = SessionModel.started_at > LAST_INSTANT_KEY
        yield from keys_rows(lambda key: functools.partial(SessionModel.empty_index.query, key, above), keys)
        if range_param(params).since is not None:
            below = SessionModel.started_at < FIRST_INSTANT_KEY
            yield from keys_rows(lambda key: functools.partial(SessionModel.empty_index.query, key, below), keys)

    @property
    def table(self) -> str:
        return str(SessionModel.Meta.table_name)

    def row_key(self, row: Mapping[str, Any]) -> str:
        return bucketed_row_key(row, "tenant_key", "session_id")

    def item_of(self, row: Mapping[str, Any]) -> SessionRef:
        return decode_row(SessionModel, row, self.row_key(row), _session_of)

    def writes(self, item: SessionRef, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]:
        return [{"Delete": _session_ref(item).get_delete_kwargs_from_instance(condition=_STILL_EMPTY)}]

    def item_key(self, item: SessionRef) -> str:
        return session_key(item)

    def encode(self, item: SessionRef) -> dict[str, Any]:
        return {
            "tenant_id": item.tenant_id,
            "session_id": item.session_id,
            "started_at": format_scheduled_time(item.started_at),
        }

    def decode(self, data: Mapping[str, Any]) -> SessionRef:
        return SessionRef(
            tenant_id=_text(data, "tenant_id"),
            session_id=_text(data, "session_id"),
            started_at=_instant(data, "started_at", "session item"),
        )


def session_item(session: SessionRef, exercises: int = 0) -> SessionModel:
    """A session as the platform writes it: empty (in the empty index) until its first exercise."""
    return SessionModel(
        sessions_partition_key(session.tenant_id, session.session_id),
        session.session_id,
        started_at=format_scheduled_time(session.started_at),
        exercise_count=exercises,
        empty_shard=None if exercises else index_shard_for(session_key(session), EMPTY_INDEX_KEYS),
    )


def session_key(session: SessionRef) -> str:
    return f"{session.tenant_id}#{session.session_id}"


def cleanup_params(due: CleanupRange) -> dict[str, str | None]:
    """The range a fanned-out tick's partitions delete in, as the partition messages carry it."""
    return {
        "since": None if due.since is None else format_scheduled_time(due.since),
        "cutoff": format_scheduled_time(due.cutoff),
    }


def range_param(params: Mapping[str, Any]) -> CleanupRange:
    where = "session-cleanup params"
    since = None if params.get("since") is None else _instant(params, "since", where)
    return CleanupRange(since=since, cutoff=_instant(params, "cutoff", where))


# A missing session fails this too (no attribute to compare): a second delete is already done.
_STILL_EMPTY: Final = SessionModel.exercise_count == 0


def _started_in(due: CleanupRange) -> Condition:
    cutoff = format_scheduled_time(due.cutoff)
    if due.since is None:
        return SessionModel.started_at <= cutoff
    # BETWEEN is inclusive; one second past the lower bound keeps the range half-open.
    return SessionModel.started_at.between(format_scheduled_time(due.since + timedelta(seconds=1)), cutoff)


def _session_ref(session: SessionRef) -> SessionModel:
    return SessionModel(sessions_partition_key(session.tenant_id, session.session_id), session.session_id)


def _session_of(item: SessionModel) -> SessionRef:
    try:
        started_at = parse_scheduled_time(item.started_at, field="started_at")
    except MalformedTickError as error:  # a row is not a tick: name the field, not a "malformed tick"
        raise FieldError("started_at", error.problem) from None
    return SessionRef(tenant_id=tenant_of(item.tenant_key), session_id=item.session_id, started_at=started_at)


def empty_index_keys(partition: str) -> tuple[str, ...]:
    """The empty-index keys a partition reads (of the current `EMPTY_INDEX_KEYS`)."""
    if partition not in EMPTY_INDEX_PARTITIONS:
        raise ValueError(f"partition must be an empty-index shard '0'..'{EMPTY_INDEX_SHARDS - 1}', got {partition!r}")
    return partition_keys(int(partition), EMPTY_INDEX_SHARDS, EMPTY_INDEX_KEYS)


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"session item: {name} must be a non-empty string, got {value!r}")
    return value


def _instant(data: Mapping[str, Any], name: str, where: str) -> datetime:
    value = data.get(name)
    problem = f"{where}: {name} must be a UTC instant like 2026-12-01T14:00:00Z, got {value!r}"
    if not isinstance(value, str):
        raise ValueError(problem)
    try:
        return parse_scheduled_time(value, field=name)
    except MalformedTickError:
        raise ValueError(problem) from None
