"""Helpers to test a job's `PartitionWork` directly against moto in-process: tables from
template.yaml, one item's actions applied the way the kit's batch writer applies a lone item,
and a partition read to the end through its cursors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import boto3
from moto import mock_aws

from clockless_tools.local.dynamodb import LOCAL_REGION, table_definition
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template


class PageLike[ItemT](Protocol):
    @property
    def items(self) -> list[ItemT]: ...
    @property
    def cursor(self) -> dict[str, Any] | None: ...


class Readable[ItemT](Protocol):
    def read(
        self, partition: str, params: Mapping[str, Any], cursor: Mapping[str, Any] | None, limit: int
    ) -> PageLike[Any]: ...

    def item_of(self, row: Any) -> ItemT: ...


def items_of[ItemT](work: Readable[ItemT], page: PageLike[Any]) -> list[ItemT]:
    """A page's rows decoded, as the kit decodes them (one at a time)."""
    return [work.item_of(row) for row in page.items]


@contextlib.contextmanager
def moto_tables(template: Template, *logical_ids: str) -> Iterator[Any]:
    """The named tables of template.yaml in moto, in-process; a low-level client for them."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name=LOCAL_REGION)
        for logical_id in logical_ids:
            client.create_table(**table_definition(logical_id, template.tables[logical_id], LocalNames()))
        yield client


def apply(client: Any, actions: Sequence[Mapping[str, Any]]) -> bool:
    """Apply one item's actions in one transaction: True if applied, False if a condition said
    the item was already done. Anything else raises."""
    try:
        client.transact_write_items(TransactItems=list(actions))
    except client.exceptions.TransactionCanceledException as error:
        codes = {reason.get("Code") for reason in error.response.get("CancellationReasons", [])}
        if "ConditionalCheckFailed" in codes and codes <= {"ConditionalCheckFailed", "None"}:
            return False
        raise
    return True


def read_all[ItemT](
    work: Readable[ItemT],
    partition: str,
    params: Mapping[str, Any],
    limit: int,
    cursor: dict[str, Any] | None = None,
) -> tuple[list[ItemT], int]:
    """Every item of a partition from `cursor` (None: the start), page by page, decoded, and the
    number of pages read. The cursor goes through JSON between pages, as it does on the partition record."""
    items: list[ItemT] = []
    pages = 0
    while True:
        page = work.read(partition, params, cursor, limit)
        pages += 1
        assert len(page.items) <= limit
        items.extend(items_of(work, page))
        if page.cursor is None:
            return items, pages
        cursor = json.loads(json.dumps(page.cursor))
