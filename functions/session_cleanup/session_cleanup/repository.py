"""Workout sessions in DynamoDB, behind the `SessionStore` the logic asks for."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Final

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DeleteError, UpdateError
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from clockless import format_scheduled_time, parse_scheduled_time
from clockless.dynamo import bind_table, is_condition_failure, shard_for
from session_cleanup.logic import SessionRef

# Empty sessions are spread over this many partitions of the sparse index.
EMPTY_INDEX_SHARDS: Final = 4


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

    tenant_id = UnicodeAttribute(hash_key=True)
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
        cutoff = format_scheduled_time(started_at_or_before)
        condition = (
            SessionModel.started_at <= cutoff
            if started_after is None
            # BETWEEN is inclusive; one second past the lower bound keeps the range half-open.
            else SessionModel.started_at.between(format_scheduled_time(started_after + timedelta(seconds=1)), cutoff)
        )
        for shard in range(EMPTY_INDEX_SHARDS):
            for item in SessionModel.empty_index.query(str(shard), condition):
                yield SessionRef(
                    tenant_id=item.tenant_id,
                    session_id=item.session_id,
                    started_at=parse_scheduled_time(item.started_at, field="started_at"),
                )

    def delete_if_empty(self, session: SessionRef) -> bool:
        try:
            SessionModel(session.tenant_id, session.session_id).delete(condition=SessionModel.exercise_count == 0)
        except DeleteError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    # The platform's own write path, used by seeding and tests.
    def start_sessions(self, sessions: Iterable[SessionRef]) -> None:
        with SessionModel.batch_write() as batch:
            for session in sessions:
                batch.save(
                    SessionModel(
                        session.tenant_id,
                        session.session_id,
                        started_at=format_scheduled_time(session.started_at),
                        exercise_count=0,
                        empty_shard=shard_for(f"{session.tenant_id}#{session.session_id}", EMPTY_INDEX_SHARDS),
                    )
                )

    def log_exercise(self, tenant_id: str, session_id: str) -> None:
        """Count one exercise; the session leaves the empty index with its first one."""
        try:
            SessionModel(tenant_id, session_id).update(
                actions=[SessionModel.exercise_count.add(1), SessionModel.empty_shard.remove()],
                condition=SessionModel.session_id.exists(),
            )
        except UpdateError as error:
            if is_condition_failure(error):
                raise LookupError(f"no session {tenant_id}/{session_id}") from None
            raise
