"""The template's tables and queues, fresh for each test, without a request per table and queue.

The integration tests' `tables` fixture gave every test (about 200 of them) new tables and queues
by CreateTable, UpdateTimeToLive and CreateQueue, then DeleteTable and DeleteQueue: about thirty
requests, two fifths of a light test's CPU. moto's server runs in the test process,
and what those requests leave behind is one object per table or queue in its backends' `tables`
and `queues`. So the objects are made once per session through the wire, copied while still
empty, and each test gets copies of those copies; afterwards they are removed as moto's own
DeleteTable and DeleteQueue remove them. The fault-model tests copy their tables once seeded the
same way (`FreshBackends.of`) and put them back for each fault world.
`tests/unit/test_upgrade_canaries.py` fails when moto stops keeping them there.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clockless_tools.local.dynamodb import LOCAL_REGION, create_tables
from clockless_tools.local.queues import create_queues
from clockless_tools.template.intrinsics import LocalNames
from clockless_tools.template.model import Template


def dynamodb_backend(account: str | None = None) -> Any:
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[account or DEFAULT_ACCOUNT_ID][LOCAL_REGION]


def sqs_backend(account: str | None = None) -> Any:
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    return sqs_backends[account or DEFAULT_ACCOUNT_ID][LOCAL_REGION]


def copied(objects: dict[str, Any]) -> dict[str, Any]:
    """Deep copies of backend objects, copied together (a queue's dead-letter queue is the copy of
    it among them), each lock a new one (a queue waits for messages on one; locks do not copy)."""
    memo: dict[int, Any] = {}
    for value in objects.values():
        for attribute in vars(value).values():
            if isinstance(attribute, threading.Condition):
                memo[id(attribute)] = threading.Condition()
    return copy.deepcopy(objects, memo)


@dataclass(frozen=True)
class FreshBackends:
    """Empty tables and queues as the template declares them, to install again and again."""

    tables: dict[str, Any]
    queues: dict[str, Any]

    @classmethod
    def made(cls, template: Template, endpoint: str, names: LocalNames = LocalNames()) -> FreshBackends:
        """Made once through the wire (the tools' own create_tables and create_queues), copied, dropped."""
        table_names = create_tables(template, endpoint, names)
        queue_names = [names.queue_name(logical_id) for logical_id in create_queues(template, endpoint, names)]
        fresh = cls(
            copied({name: dynamodb_backend().tables[name] for name in table_names}),
            copied({name: sqs_backend().queues[name] for name in queue_names}),
        )
        fresh.drop()
        return fresh

    @classmethod
    def of(cls, tables: Iterable[str], queues: Iterable[str] = ()) -> FreshBackends:
        """Copies of what the backends hold now under these names: tables once seeded, to put back
        as they were for each fault world instead of DeleteTable, CreateTable and the seeding
        requests again (a table's items and settings are all in its object)."""
        return cls(
            copied({name: dynamodb_backend().tables[name] for name in tables}),
            copied({name: sqs_backend().queues[name] for name in queues}),
        )

    def install(self) -> None:
        dynamodb_backend().tables.update(copied(self.tables))
        sqs_backend().queues.update(copied(self.queues))

    def drop(self) -> None:
        """What DeleteTable and DeleteQueue do in moto: the object leaves its backend's dict."""
        for name in self.tables:
            dynamodb_backend().tables.pop(name, None)
        for name in self.queues:
            sqs_backend().queues.pop(name, None)
