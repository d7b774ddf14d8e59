"""Programs and windows in DynamoDB: the `ProgramStore` the sequential logic asks for, and the
`WindowPartitionWork` a fanned-out tick's workers apply, a partition reading its due-index keys."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from datetime import date
from typing import Any, Final

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import TransactWriteError
from pynamodb.expressions.condition import And, Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import GlobalSecondaryIndex, IncludeProjection
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

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
    tenant_keys,
    tenant_of,
)
from clockless.fanout import Page
from clockless.items import FieldError
from window_generation.logic import Program, Window, windows_due

STATUS_ACTIVE: Final = "ACTIVE"
STATUS_ENDED: Final = "ENDED"
# Active programs are spread over this many keys of the sparse due index: each index partition key
# takes about 1,000 WCU/s, and hundreds of keys hash evenly enough onto the index's physical
# partitions that none holds many more than its share (32 keys put 6 on one of 23 at p95:
# docs/fan-out.md#index-keys-and-partitions). Raising it is safe on a deployed table (a program
# moves to its new key when it next rolls, and every key a lower count wrote is still read);
# lowering it is a migration (docs/fan-out.md#changing-a-jobs-shard-count).
DUE_INDEX_KEYS: Final = 512
# A fanned-out tick's partitions, one worker each: partition p reads the keys k with k % 32 == p
# (`clockless.dynamo.partition_keys`). template.yaml's Mappings.Jobs.WindowGeneration.Shards is the
# same number (rule shards-match-concurrency).
DUE_INDEX_SHARDS: Final = 32
DUE_INDEX_PARTITIONS: Final = tuple(str(shard) for shard in range(DUE_INDEX_SHARDS))
# A program's windows and its roll are one item of work, applied in one transaction of at most
# 99 actions (the kit adds its counter as the 100th): so at most 98 windows per item. A program
# further behind is rolled 98 windows and stays due; a later page of its partition or the next
# tick takes up the rest.
MAX_WINDOWS_PER_ITEM: Final = 98
# One tenant's programs are spread over this many partition key values (`<tenant>#<bucket>`, the
# bucket from the program id), so the biggest tenant is not held to one key's 1,000 write units
# per second (docs/fan-out.md#a-whale-tenant). Changing it moves every program to another key:
# that is a migration, not an edit.
TENANT_BUCKETS: Final = 16
# The last key a date can be: a due-index key that sorts after it (`not-a-date`) is no date, and no
# tick's `<=` reaches it. Keys that sort before every date are within every tick's range.
LAST_DATE_KEY: Final = date.max.isoformat()


def program_key(tenant_id: str, program_id: str) -> str:
    return f"{tenant_id}#{program_id}"


def programs_partition_key(tenant_id: str, program_id: str) -> str:
    """The programs table's partition key value of a program: its tenant's bucket."""
    return bucketed_key(tenant_id, program_id, TENANT_BUCKETS)


class ProgramDueIndex(GlobalSecondaryIndex["ProgramModel"]):
    """Sparse: only active programs carry `due_shard`, so ended ones are never read."""

    class Meta:
        index_name = "due-by-window-end"
        projection = IncludeProjection(["window_length_days"])

    due_shard = UnicodeAttribute(hash_key=True)
    current_window_end = UnicodeAttribute(range_key=True)


class ProgramModel(Model):
    class Meta:
        table_name = "programs-table-not-bound"

    tenant_key = UnicodeAttribute(hash_key=True)  # programs_partition_key
    program_id = UnicodeAttribute(range_key=True)
    status = UnicodeAttribute()
    window_length_days = NumberAttribute()
    current_window_end = UnicodeAttribute()
    due_shard = UnicodeAttribute(null=True)
    due_index = ProgramDueIndex()


class WindowModel(Model):
    class Meta:
        table_name = "windows-table-not-bound"

    program_key = UnicodeAttribute(hash_key=True)
    start_date = UnicodeAttribute(range_key=True)
    tenant_id = UnicodeAttribute()
    program_id = UnicodeAttribute()
    end_date = UnicodeAttribute()
    created_for_tick = UnicodeAttribute()


class DynamoProgramStore:
    def __init__(self, programs_table: str, windows_table: str) -> None:
        bind_table(ProgramModel, programs_table)
        bind_table(WindowModel, windows_table)
        self._connection = Connection()

    def find_due_programs(self, on_or_before: date) -> Iterator[Program]:
        cutoff = on_or_before.isoformat()
        for key in range(DUE_INDEX_KEYS):
            for item in ProgramModel.due_index.query(str(key), ProgramModel.current_window_end <= cutoff):
                yield _program_of(item)

    def roll_forward(self, program: Program, window: Window, *, tick_key: str) -> bool:
        try:
            with TransactWrite(connection=self._connection) as transaction:
                transaction.save(_window_item(window, tick_key), condition=_WINDOW_IS_NEW)
                transaction.update(
                    _program_ref(program), actions=_roll(program, window), condition=_still_as_read(program)
                )
        except TransactWriteError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def programs_of(self, tenant_id: str) -> Iterator[Program]:
        """Every program of one tenant, active or ended: one Query per bucket of its key."""
        for key in tenant_keys(tenant_id, TENANT_BUCKETS):
            for item in ProgramModel.query(key):
                yield _program_of(item)

    # The platform's own write path, used by seeding and tests.
    def save_programs(self, programs: Iterable[Program], *, active: bool = True) -> None:
        with ProgramModel.batch_write() as batch:
            for program in programs:
                batch.save(_program_item(program, active=active))


class WindowPartitionWork:
    """A fanned-out window-generation tick: one partition per `DUE_INDEX_SHARDS`, each reading its
    due-index keys (`due_index_keys`), one item per due program. An item's writes are its due
    windows (each created only if new) and the program's roll (only if it still ends where it was
    read and is active), applied together."""

    def __init__(self, store: DynamoProgramStore) -> None:
        # The store binds the models to the tables the environment names.
        self._store = store

    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> Page[dict[str, Any]]:
        """Up to `limit` due programs of the partition's keys, from `cursor` (None: from the start)."""
        keys = due_index_keys(partition)
        cutoff = ProgramModel.current_window_end <= business_date_param(params).isoformat()

        def query(key: str, left: int, start: dict[str, Any] | None) -> Rows:
            return raw_page(ProgramModel.due_index.query(key, cutoff, limit=left, last_evaluated_key=start))

        rows, next_cursor = keys_page(query, keys, cursor, limit, hash_key="due_shard")
        return Page(items=rows, cursor=next_cursor)

    def read_outside(self, partition: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The partition's due-index rows whose key sorts after every date: one Query per key (the
        kit fails each by name, clockless.fanout.ReadsOutside)."""
        above = ProgramModel.current_window_end > LAST_DATE_KEY
        return keys_rows(
            lambda key: functools.partial(ProgramModel.due_index.query, key, above), due_index_keys(partition)
        )

    @property
    def table(self) -> str:
        return str(ProgramModel.Meta.table_name)

    def row_key(self, row: Mapping[str, Any]) -> str:
        return bucketed_row_key(row, "tenant_key", "program_id")

    def item_of(self, row: Mapping[str, Any]) -> Program:
        return decode_row(ProgramModel, row, self.row_key(row), _program_of)

    def writes(self, item: Program, params: Mapping[str, Any], tick_key: str) -> list[dict[str, Any]]:
        windows = windows_due(item, business_date_param(params))[:MAX_WINDOWS_PER_ITEM]
        if not windows:
            return []
        actions: list[dict[str, Any]] = [
            {"Put": _window_item(window, tick_key).get_save_kwargs_from_instance(condition=_WINDOW_IS_NEW)}
            for window in windows
        ]
        roll = _program_ref(item).get_update_kwargs_from_instance(
            actions=_roll(item, windows[-1]), condition=_still_as_read(item)
        )
        actions.append({"Update": roll})
        return actions

    def item_key(self, item: Program) -> str:
        return program_key(item.tenant_id, item.program_id)

    def encode(self, item: Program) -> dict[str, Any]:
        return {
            "tenant_id": item.tenant_id,
            "program_id": item.program_id,
            "window_length_days": item.window_length_days,
            "current_window_end": item.current_window_end.isoformat(),
        }

    def decode(self, data: Mapping[str, Any]) -> Program:
        length = data.get("window_length_days")
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise ValueError(f"program item: window_length_days must be a whole number of days >= 1, got {length!r}")
        return Program(
            tenant_id=_text(data, "tenant_id"),
            program_id=_text(data, "program_id"),
            window_length_days=length,
            current_window_end=_date(data, "current_window_end", "program item"),
        )


def business_date_param(params: Mapping[str, Any]) -> date:
    return _date(params, "business_date", "window-generation params")


def due_index_keys(partition: str) -> tuple[str, ...]:
    """The due-index keys a partition reads (of the current `DUE_INDEX_KEYS`)."""
    if partition not in DUE_INDEX_PARTITIONS:
        raise ValueError(f"partition must be a due-index shard '0'..'{DUE_INDEX_SHARDS - 1}', got {partition!r}")
    return partition_keys(int(partition), DUE_INDEX_SHARDS, DUE_INDEX_KEYS)


def _program_of(item: ProgramModel) -> Program:
    length = item.window_length_days
    if length is None or length != int(length) or length < 1:
        raise FieldError("window_length_days", f"must be a whole number of days >= 1, got {length!r}")
    try:
        current_window_end = date.fromisoformat(item.current_window_end)
    except (TypeError, ValueError):
        raise FieldError("current_window_end", f"must be a date YYYY-MM-DD, got {item.current_window_end!r}") from None
    return Program(
        tenant_id=tenant_of(item.tenant_key),
        program_id=item.program_id,
        window_length_days=int(length),
        current_window_end=current_window_end,
    )


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"program item: {name} must be a non-empty string, got {value!r}")
    return value


def _date(data: Mapping[str, Any], name: str, where: str) -> date:
    value = data.get(name)
    try:
        if not isinstance(value, str):
            raise TypeError
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name} must be a date YYYY-MM-DD, got {value!r}") from None


def _program_item(program: Program, *, active: bool) -> ProgramModel:
    return ProgramModel(
        programs_partition_key(program.tenant_id, program.program_id),
        program.program_id,
        status=STATUS_ACTIVE if active else STATUS_ENDED,
        window_length_days=program.window_length_days,
        current_window_end=program.current_window_end.isoformat(),
        # Only active programs carry the shard, which keeps the due index sparse.
        due_shard=due_shard_of(program) if active else None,
    )


def due_shard_of(program: Program) -> str:
    """The due-index key an active program is under, of the current `DUE_INDEX_KEYS`."""
    return index_shard_for(program_key(program.tenant_id, program.program_id), DUE_INDEX_KEYS)


def _roll(program: Program, last: Window) -> list[Action]:
    """The program's new window end, and its shard as the current count places it: a program written
    under another count (or hash) moves when it rolls, at no extra write unit (the roll already moves
    its due-index entry, whose range key changes)."""
    return [
        ProgramModel.current_window_end.set(last.end_date.isoformat()),
        ProgramModel.due_shard.set(due_shard_of(program)),
    ]


_WINDOW_IS_NEW: Final = WindowModel.program_key.does_not_exist()


def _window_item(window: Window, tick_key: str) -> WindowModel:
    return WindowModel(
        program_key(window.tenant_id, window.program_id),
        window.start_date.isoformat(),
        tenant_id=window.tenant_id,
        program_id=window.program_id,
        end_date=window.end_date.isoformat(),
        created_for_tick=tick_key,
    )


def _program_ref(program: Program) -> ProgramModel:
    return ProgramModel(programs_partition_key(program.tenant_id, program.program_id), program.program_id)


def _still_as_read(program: Program) -> Condition:
    """The program has not been rolled since it was read, and has not ended."""
    return And(
        ProgramModel.current_window_end == program.current_window_end.isoformat(),
        ProgramModel.status == STATUS_ACTIVE,
    )
