"""moto's transactions without the copy of every table they name.

To roll a failed `TransactWriteItems` back, moto deep-copies every table the transaction names,
all its items, before it starts: a cost that grows with the table (~0.2 s per transaction at 10k
items) and that DynamoDB does not have. It was two fifths of `make run`'s CPU, since the ledger
grows with every partition a tick fans out to (docs/development.md has the profile). While
`transactions_snapshot_touched_items` is active, a transaction snapshots only the items it names
and restores exactly those when it fails; what it answers and leaves in the tables is the same
(tests/integration/test_bench.py runs one cancelled transaction both ways). `make run` and
`make bench` use it; the tests' servers run stock moto.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any


@contextlib.contextmanager
def stock_transactions() -> Iterator[None]:
    """moto's own transactions for the duration, even inside `transactions_snapshot_touched_items`
    (the upgrade canary checks what moto itself does; the tests' server keeps the patch active)."""
    from moto.dynamodb import models

    patched = getattr(models, "copy"), models.DynamoDBBackend.transact_write_items  # noqa: B009
    stock = getattr(models.DynamoDBBackend.transact_write_items, "stock", None)
    if stock is None:
        yield
        return
    setattr(models, "copy", copy)  # noqa: B010 - the module moto copies tables with
    setattr(models.DynamoDBBackend, "transact_write_items", stock)  # noqa: B010
    try:
        yield
    finally:
        setattr(models, "copy", patched[0])  # noqa: B010
        setattr(models.DynamoDBBackend, "transact_write_items", patched[1])  # noqa: B010


@contextlib.contextmanager
def transactions_snapshot_touched_items() -> Iterator[None]:
    """Patch moto's DynamoDB backend in this process for the duration (see the module's docstring)."""
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    class TablesAreNotCopied:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    stock = models.DynamoDBBackend.transact_write_items
    stock_copy = getattr(models, "copy")  # noqa: B009 - not exported: the module moto copies tables with

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        touched = [snapshot for entry in transact_items for snapshot in _snapshots(backend, entry)]
        try:
            stock(backend, transact_items)
        except BaseException:
            for table_name, key, item in reversed(touched):
                if item is not None:
                    backend.get_table(table_name).put_item(item.to_json()["Attributes"])
                elif backend.get_item(table_name, key) is not None:
                    backend.delete_item(table_name, key)
            raise

    # Where moto's own transaction is (patches nest: the innermost knows the stock one).
    transact_write_items.stock = getattr(stock, "stock", stock)  # type: ignore[attr-defined]
    setattr(models, "copy", TablesAreNotCopied)  # noqa: B010 - the module moto copies tables with
    setattr(models.DynamoDBBackend, "transact_write_items", transact_write_items)  # noqa: B010
    try:
        yield
    finally:
        setattr(models.DynamoDBBackend, "transact_write_items", stock)  # noqa: B010
        setattr(models, "copy", stock_copy)  # noqa: B010


def _snapshots(backend: Any, entry: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], Any]]:
    for operation_type, operation in entry.items():
        table_name = operation.get("TableName")
        if table_name not in backend.tables:
            continue  # moto rejects it before writing anything
        if operation_type == "Put":
            table = backend.get_table(table_name)
            key_names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
            if not all(name in operation["Item"] for name in key_names):
                continue
            key = {name: operation["Item"][name] for name in key_names}
        else:
            key = operation["Key"]
        yield table_name, key, copy.deepcopy(backend.get_item(table_name, key))
