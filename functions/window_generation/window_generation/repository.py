"""Programs and windows in DynamoDB, behind the `ProgramStore` the logic asks for."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import date
from typing import Final

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import TransactWriteError
from pynamodb.indexes import GlobalSecondaryIndex, IncludeProjection
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from clockless.dynamo import bind_table, is_condition_failure, shard_for
from window_generation.logic import Program, Window

STATUS_ACTIVE: Final = "ACTIVE"
STATUS_ENDED: Final = "ENDED"
# Active programs are spread over this many partitions of the sparse due index.
DUE_INDEX_SHARDS: Final = 4


def program_key(tenant_id: str, program_id: str) -> str:
    return f"{tenant_id}#{program_id}"


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

    tenant_id = UnicodeAttribute(hash_key=True)
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
        for shard in range(DUE_INDEX_SHARDS):
            for item in ProgramModel.due_index.query(str(shard), ProgramModel.current_window_end <= cutoff):
                yield Program(
                    tenant_id=item.tenant_id,
                    program_id=item.program_id,
                    window_length_days=int(item.window_length_days),
                    current_window_end=date.fromisoformat(item.current_window_end),
                )

    def roll_forward(self, program: Program, window: Window, *, tick_key: str) -> bool:
        new_window = WindowModel(
            program_key(window.tenant_id, window.program_id),
            window.start_date.isoformat(),
            tenant_id=window.tenant_id,
            program_id=window.program_id,
            end_date=window.end_date.isoformat(),
            created_for_tick=tick_key,
        )
        stored_program = ProgramModel(program.tenant_id, program.program_id)
        try:
            with TransactWrite(connection=self._connection) as transaction:
                transaction.save(new_window, condition=WindowModel.program_key.does_not_exist())
                transaction.update(
                    stored_program,
                    actions=[ProgramModel.current_window_end.set(window.end_date.isoformat())],
                    condition=(ProgramModel.current_window_end == program.current_window_end.isoformat())
                    & (ProgramModel.status == STATUS_ACTIVE),
                )
        except TransactWriteError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    # The platform's own write path, used by seeding and tests.
    def save_programs(self, programs: Iterable[Program], *, active: bool = True) -> None:
        with ProgramModel.batch_write() as batch:
            for program in programs:
                batch.save(_program_item(program, active=active))


def _program_item(program: Program, *, active: bool) -> ProgramModel:
    return ProgramModel(
        program.tenant_id,
        program.program_id,
        status=STATUS_ACTIVE if active else STATUS_ENDED,
        window_length_days=program.window_length_days,
        current_window_end=program.current_window_end.isoformat(),
        # Only active programs carry the shard, which keeps the due index sparse.
        due_shard=shard_for(program_key(program.tenant_id, program.program_id), DUE_INDEX_SHARDS) if active else None,
    )
